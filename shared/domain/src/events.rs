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

use crate::capi::{EventName, conversion_ref};
use crate::contact::{ContactHashes, sha256_hex};
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

/// A posted event, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedEvent {
    /// The host's deduplication key, sent to every platform as the event's
    /// id.
    pub event_id: String,
    pub event: EventName,
    pub occurred_at: i64,
    pub action_source: ActionSource,
    pub source_url: Option<String>,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
    pub order_id: Option<String>,
    pub contact: Contact,
}

/// The slug a posted event's rows for the site's pixel are marked under.
pub const PIXEL_MARK: &str = crate::destinations::PIXEL_SLUG;

/// One destination's row of a posted event: what the store writes, the
/// contact already reduced to that platform's [`ContactHashes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// The destination's slug (`meta` for the pixel): with `event_id`, what
    /// makes the row once-only.
    pub slug: String,
    /// `None`: the site's pixel.
    pub destination: Option<String>,
    /// The row's reference ([`row_ref`]).
    pub sk: String,
    pub event_id: String,
    pub event_name: EventName,
    pub event_time: i64,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
    pub order_id: Option<String>,
    pub action_source: ActionSource,
    pub source_url: Option<String>,
    pub hashes: ContactHashes,
}

/// The reference of a posted event's row for `slug`, created at
/// `created_at`: `<createdAt>#sha256(slug:eventId)`, so the rows of one
/// event for several destinations never share a key.
pub fn row_ref(created_at: i64, slug: &str, event_id: &str) -> String {
    conversion_ref(created_at, &sha256_hex(&format!("{slug}:{event_id}")))
}

impl EventRow {
    /// The row of `event` for one destination of `platform`.
    pub fn of(
        event: &PostedEvent,
        slug: &str,
        destination: Option<&str>,
        platform: Platform,
        site_country: Option<&str>,
        now: i64,
    ) -> Self {
        EventRow {
            slug: slug.to_owned(),
            destination: destination.map(str::to_owned),
            sk: row_ref(now, slug, &event.event_id),
            event_id: event.event_id.clone(),
            event_name: event.event,
            event_time: event.occurred_at,
            value_cents: event.value_cents,
            currency: event.currency.clone(),
            order_id: event.order_id.clone(),
            action_source: event.action_source,
            source_url: event.source_url.clone(),
            hashes: match_data(platform, &event.contact, site_country),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contact() -> Contact {
        Contact {
            email: Some(" John.Smith+shop@Gmail.com ".into()),
            phone: Some("(11) 98765-4321".into()),
            country: None,
            first_name: Some("Valéry".into()),
            last_name: Some("Smith Jr.".into()),
            external_id: Some("Client-42".into()),
            signals: [
                (Signal::Ip, "203.0.113.9".to_owned()),
                (Signal::UserAgent, "Mozilla/5.0".to_owned()),
                (Signal::Fbc, "fb.1.1554763741205.AbCdEf".to_owned()),
                (Signal::Ttclid, "E.C.P.abc".to_owned()),
                (Signal::Gclid, "Cj0KCQ".to_owned()),
            ]
            .into(),
        }
    }

    #[test]
    fn each_platform_gets_its_own_hashes_and_only_its_own_click_ids() {
        let c = contact();
        let meta = match_data(Platform::Meta, &c, Some("BR"));
        let google = match_data(Platform::Google, &c, Some("BR"));
        let tiktok = match_data(Platform::TikTok, &c, Some("BR"));
        assert_eq!(meta.ph, [sha256_hex("5511987654321")]);
        assert_eq!(google.ph, [sha256_hex("+5511987654321")]);
        assert_eq!(tiktok.ph, [sha256_hex("+5511987654321")]);
        assert_eq!(meta.em, [sha256_hex("john.smith+shop@gmail.com")]);
        assert_eq!(google.em, [sha256_hex("johnsmith@gmail.com")]);
        assert_eq!(meta.first_name, Some(sha256_hex("valéry")));
        assert_eq!(google.first_name, None);
        assert_eq!(tiktok.last_name, Some(sha256_hex("smithjr")));
        assert_eq!(tiktok.external_id, Some(sha256_hex("client-42")));
        assert_eq!(meta.external_id, Some(sha256_hex("Client-42")));
        let keys = |h: &ContactHashes| h.signals.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&meta), ["fbc", "ip", "userAgent"]);
        assert_eq!(keys(&google), ["gclid"]);
        assert_eq!(keys(&tiktok), ["ip", "ttclid", "userAgent"]);
    }

    #[test]
    fn a_prehashed_value_goes_only_where_metas_rule_is_the_platforms() {
        let h = sha256_hex("5511987654321");
        let c = Contact {
            phone: Some(h.clone()),
            email: Some(sha256_hex("a@b.co")),
            ..Contact::default()
        };
        assert_eq!(match_data(Platform::Meta, &c, None).ph, vec![h.clone()]);
        assert_eq!(match_data(Platform::Snap, &c, None).ph, vec![h.clone()]);
        assert!(match_data(Platform::TikTok, &c, None).ph.is_empty());
        assert!(match_data(Platform::Google, &c, None).ph.is_empty());
        assert!(match_data(Platform::Google, &c, None).em.is_empty());
        assert_eq!(match_data(Platform::TikTok, &c, None).em.len(), 1);
    }

    #[test]
    fn malformed_fields_are_dropped_by_name_never_by_value() {
        let c = Contact {
            email: Some("not-an-email".into()),
            phone: Some("call me".into()),
            first_name: Some("Ana\u{200B}".into()),
            signals: [
                (Signal::Ip, "999.1.1.1".to_owned()),
                (Signal::Ttclid, "has space".to_owned()),
                (Signal::Fbp, "fb.1.2.3".to_owned()),
            ]
            .into(),
            ..Contact::default()
        };
        let (kept, dropped) = c.checked();
        let names: Vec<String> = dropped.iter().map(Dropped::warning).collect();
        assert_eq!(
            names,
            [
                "contact.email: dropped: malformed",
                "contact.phone: dropped: malformed",
                "contact.firstName: dropped: malformed",
                "contact.ip: dropped: malformed",
                "contact.ttclid: dropped: malformed",
            ]
        );
        assert!(kept.has_identity(), "fbp is left to match on");
        assert_eq!(format!("{kept:?}"), "Contact(fbp)");
        let only_ip = Contact {
            signals: [(Signal::Ip, "203.0.113.9".to_owned())].into(),
            ..Contact::default()
        };
        assert!(!only_ip.has_identity());
    }

    #[test]
    fn the_vocabularies_round_trip() {
        for a in ActionSource::ALL {
            assert_eq!(ActionSource::parse(a.as_str()), Some(a));
        }
        for s in Signal::ALL {
            assert_eq!(Signal::parse(s.as_str()), Some(s));
        }
        assert!(ActionSource::Website.needs_source_url());
    }
}
