//! Events a storefront or backend posts (`POST /v1/sites/{siteId}/events`):
//! their fields and checks, the contact they carry in plain over TLS, and
//! what each destination's row keeps of it: that platform's hashes, the
//! plain signals it wants (IP, user agent, its own click ids) and nothing
//! else. The plain contact never leaves this module: it is not stored,
//! logged, queued or put on the bus, and its `Debug` shows no value.
//!
//! A malformed contact field is dropped with a warning naming the field;
//! the event still goes if anything is left to match on.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::contact::ContactHashes;
use crate::identifiers::{Platform, email, external_id, is_sha256, name, phone};
use crate::ids::is_hidden;

/// The most events one request carries.
pub const MAX_EVENTS_PER_POST: usize = 100;

/// Where the conversion happened, as the platforms ask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActionSource {
    Website,
    App,
    Chat,
    Phone,
    PhysicalStore,
    SystemGenerated,
    Other,
}

impl ActionSource {
    pub const ALL: [ActionSource; 7] = [
        Self::Website,
        Self::App,
        Self::Chat,
        Self::Phone,
        Self::PhysicalStore,
        Self::SystemGenerated,
        Self::Other,
    ];

    /// adtrail's name, and Meta's `action_source`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Website => "website",
            Self::App => "app",
            Self::Chat => "chat",
            Self::Phone => "phone",
            Self::PhysicalStore => "physical_store",
            Self::SystemGenerated => "system_generated",
            Self::Other => "other",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == text)
    }

    /// Whether the platforms need the page the event happened on.
    pub fn needs_source_url(self) -> bool {
        self == Self::Website
    }
}

/// A click or browser id, sent plain to the one platform that issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    Ip,
    UserAgent,
    Fbc,
    Fbp,
    CtwaClid,
    Gclid,
    Gbraid,
    Wbraid,
    Ttclid,
    Ttp,
    Epik,
    ScClickId,
}

impl Signal {
    pub const ALL: [Signal; 12] = [
        Self::Ip,
        Self::UserAgent,
        Self::Fbc,
        Self::Fbp,
        Self::CtwaClid,
        Self::Gclid,
        Self::Gbraid,
        Self::Wbraid,
        Self::Ttclid,
        Self::Ttp,
        Self::Epik,
        Self::ScClickId,
    ];

    /// The field's name in `contact`, and in a row's stored signals.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ip => "ip",
            Self::UserAgent => "userAgent",
            Self::Fbc => "fbc",
            Self::Fbp => "fbp",
            Self::CtwaClid => "ctwaClid",
            Self::Gclid => "gclid",
            Self::Gbraid => "gbraid",
            Self::Wbraid => "wbraid",
            Self::Ttclid => "ttclid",
            Self::Ttp => "ttp",
            Self::Epik => "epik",
            Self::ScClickId => "scClickId",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether `platform` receives it: IP and user agent all but Google
    /// (whose Data Manager events take neither), each click id its own
    /// platform.
    pub fn goes_to(self, platform: Platform) -> bool {
        use Platform as P;
        match self {
            Self::Ip | Self::UserAgent => platform != P::Google,
            Self::Fbc | Self::Fbp | Self::CtwaClid => platform == P::Meta,
            Self::Gclid | Self::Gbraid | Self::Wbraid => platform == P::Google,
            Self::Ttclid | Self::Ttp => platform == P::TikTok,
            Self::Epik => platform == P::Pinterest,
            Self::ScClickId => platform == P::Snap,
        }
    }
}

/// The contact a posted event carries, plain. Its `Debug` shows which
/// fields are present, never a value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Contact {
    pub email: Option<String>,
    pub phone: Option<String>,
    /// ISO 3166 alpha-2: the phone's country when it has no `+`.
    pub country: Option<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub external_id: Option<String>,
    pub signals: BTreeMap<Signal, String>,
}

impl std::fmt::Debug for Contact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let present = [
            ("email", self.email.is_some()),
            ("phone", self.phone.is_some()),
            ("firstName", self.first_name.is_some()),
            ("lastName", self.last_name.is_some()),
            ("externalId", self.external_id.is_some()),
        ];
        let names: Vec<&str> = present
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .chain(self.signals.keys().map(|s| s.as_str()))
            .collect();
        write!(f, "Contact({})", names.join(", "))
    }
}

/// A contact field dropped, named as the request names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped(pub String);

impl Dropped {
    /// The warning the answer carries: the field and why, never the value.
    pub fn warning(&self) -> String {
        format!("contact.{}: dropped: malformed", self.0)
    }
}

/// Printable text without hidden characters, 1 to `max` characters.
fn printable(value: &str, max: usize) -> bool {
    let n = value.chars().count();
    n > 0 && n <= max && !value.chars().any(is_hidden)
}

impl Contact {
    /// Keeps the fields that can be read, drops the others (named). The
    /// shapes are the seed's: an e-mail of at most 254 characters with one
    /// `@` and a dotted domain, a phone of at most 32 characters of digits,
    /// spaces and `+().-`, names of at most 100, an external id of at most
    /// 256, an IP address, a user agent of at most 512, click ids of at
    /// most 512 printable ASCII characters without spaces.
    pub fn checked(mut self) -> (Self, Vec<Dropped>) {
        let mut dropped = vec![];
        let mut keep = |field: &str, value: &mut Option<String>, ok: &dyn Fn(&str) -> bool| {
            if value.as_deref().is_some_and(|v| !ok(v)) {
                *value = None;
                dropped.push(Dropped(field.to_owned()));
            }
        };
        keep("email", &mut self.email, &|v| {
            is_sha256(v) || (v.len() <= 254 && email(Platform::Meta, v).is_some())
        });
        keep("phone", &mut self.phone, &|v| {
            is_sha256(v)
                || (v.len() <= 32
                    && v.chars()
                        .all(|c| c.is_ascii_digit() || " +().-".contains(c))
                    && v.chars().filter(char::is_ascii_digit).count() >= 7)
        });
        keep("country", &mut self.country, &|v| {
            v.len() == 2 && v.bytes().all(|b| b.is_ascii_alphabetic())
        });
        keep("firstName", &mut self.first_name, &|v| printable(v, 100));
        keep("lastName", &mut self.last_name, &|v| printable(v, 100));
        keep("externalId", &mut self.external_id, &|v| printable(v, 256));
        self.signals.retain(|signal, v| {
            let ok = match signal {
                Signal::Ip => v.parse::<IpAddr>().is_ok(),
                Signal::UserAgent => printable(v, 512),
                _ => !v.is_empty() && v.len() <= 512 && v.bytes().all(|b| b.is_ascii_graphic()),
            };
            if !ok {
                dropped.push(Dropped(signal.as_str().to_owned()));
            }
            ok
        });
        (self, dropped)
    }

    /// Whether anything is left that a platform can match a person on.
    pub fn has_identity(&self) -> bool {
        self.email.is_some()
            || self.phone.is_some()
            || self.external_id.is_some()
            || self
                .signals
                .keys()
                .any(|s| !matches!(s, Signal::Ip | Signal::UserAgent))
    }
}

/// Whether a value the host already hashed (64 lowercase hex) goes to
/// `platform` for `field`. adtrail takes such a value as hashed by Meta's
/// rule (the one `meta.ph` has always had), so it goes only where the
/// platform's rule for the field is Meta's: e-mails to all but Google (its
/// Gmail rule differs), phones and names to Meta, Pinterest and Snap (Google
/// and TikTok want `+`; they drop titles or spaces), external ids to all but
/// TikTok (which lowercases them first).
pub fn takes_prehashed(platform: Platform, field: &str) -> bool {
    use Platform as P;
    match field {
        "email" => platform != P::Google,
        "phone" | "firstName" | "lastName" => {
            matches!(platform, P::Meta | P::Pinterest | P::Snap)
        }
        "externalId" => platform != P::TikTok,
        _ => false,
    }
}

/// One field as `platform`'s row keeps it: the platform's normalisation and
/// SHA-256, or the host's own hash where the platform's rule allows it.
fn hash_for(
    platform: Platform,
    field: &str,
    value: Option<&str>,
    normalise: impl FnOnce(&str) -> Option<String>,
) -> Option<String> {
    let value = value?;
    if is_sha256(value) {
        return takes_prehashed(platform, field).then(|| value.to_owned());
    }
    normalise(value).map(|v| crate::contact::sha256_hex(&v))
}

/// What `platform`'s row keeps of a contact: its hashes and its plain
/// signals. `site_country` is the phone's country when neither the phone
/// (`+`, `00`) nor the contact says it.
pub fn match_data(
    platform: Platform,
    contact: &Contact,
    site_country: Option<&str>,
) -> ContactHashes {
    let country = contact.country.as_deref().or(site_country);
    // Google's events carry e-mail and phone only.
    let names = platform != Platform::Google;
    ContactHashes {
        em: hash_for(platform, "email", contact.email.as_deref(), |v| {
            email(platform, v)
        })
        .into_iter()
        .collect(),
        ph: hash_for(platform, "phone", contact.phone.as_deref(), |v| {
            phone(platform, v, country)
        })
        .into_iter()
        .collect(),
        first_name: names
            .then(|| {
                hash_for(platform, "firstName", contact.first_name.as_deref(), |v| {
                    name(platform, v)
                })
            })
            .flatten(),
        last_name: names
            .then(|| {
                hash_for(platform, "lastName", contact.last_name.as_deref(), |v| {
                    name(platform, v)
                })
            })
            .flatten(),
        external_id: (platform != Platform::Google)
            .then(|| {
                hash_for(
                    platform,
                    "externalId",
                    contact.external_id.as_deref(),
                    |v| external_id(platform, v),
                )
            })
            .flatten(),
        signals: contact
            .signals
            .iter()
            .filter(|(s, _)| s.goes_to(platform))
            .map(|(s, v)| (s.as_str().to_owned(), v.clone()))
            .collect(),
    }
}

mod rows;
pub use rows::{EventRow, PostedEvent, RowLead, row_ref};

#[cfg(test)]
mod tests;
