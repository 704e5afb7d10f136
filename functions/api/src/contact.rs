//! The contact data a storefront's events and a host's lead changes carry:
//! `meta`, the hashes a host made by Meta's rule (never failing a call), and
//! `contact`, plain values over TLS, read strictly (an unknown field is an
//! error), then checked by the domain, which drops a malformed field with a
//! warning that names it, never its value.

use adtrail_domain::contact::{ContactHashes, parse_meta};
use adtrail_domain::events::{Contact, Signal};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ContactBody {
    email: Option<String>,
    phone: Option<String>,
    country: Option<String>,
    first_name: Option<String>,
    last_name: Option<String>,
    external_id: Option<String>,
    ip: Option<String>,
    user_agent: Option<String>,
    fbc: Option<String>,
    fbp: Option<String>,
    ctwa_clid: Option<String>,
    gclid: Option<String>,
    gbraid: Option<String>,
    wbraid: Option<String>,
    ttclid: Option<String>,
    ttp: Option<String>,
    epik: Option<String>,
    sc_click_id: Option<String>,
}

impl ContactBody {
    pub(crate) fn into_contact(self) -> Contact {
        let signals = [
            (Signal::Ip, self.ip),
            (Signal::UserAgent, self.user_agent),
            (Signal::Fbc, self.fbc),
            (Signal::Fbp, self.fbp),
            (Signal::CtwaClid, self.ctwa_clid),
            (Signal::Gclid, self.gclid),
            (Signal::Gbraid, self.gbraid),
            (Signal::Wbraid, self.wbraid),
            (Signal::Ttclid, self.ttclid),
            (Signal::Ttp, self.ttp),
            (Signal::Epik, self.epik),
            (Signal::ScClickId, self.sc_click_id),
        ];
        Contact {
            email: self.email,
            phone: self.phone,
            country: self.country,
            first_name: self.first_name,
            last_name: self.last_name,
            external_id: self.external_id,
            signals: signals
                .into_iter()
                .filter_map(|(s, v)| Some((s, v?)))
                .collect(),
        }
    }
}

/// Reads a `contact`, keeping the fields that can be read: the contact, and
/// a warning per dropped field, named under `prefix` (`events[3].`, or
/// nothing).
pub(crate) fn read_contact(body: ContactBody, prefix: &str) -> (Contact, Vec<String>) {
    let (contact, dropped) = body.into_contact().checked();
    let warnings = dropped
        .iter()
        .map(|d| format!("{prefix}{}", d.warning()))
        .collect();
    (contact, warnings)
}

/// Reads `meta`, never failing: the warning names why, not what.
fn read_meta(meta: Option<&Value>) -> (Option<ContactHashes>, Option<String>) {
    match meta {
        None | Some(Value::Null) => (None, None),
        Some(v) => match parse_meta(v) {
            Ok(h) => (Some(h), None),
            Err(why) => {
                tracing::warn!(reason = ?why, "meta ignored");
                (
                    None,
                    Some(format!(
                        "meta: ignored ({why:?}); expected {{ph: [SHA-256 hex] (at most 10), externalId?: SHA-256 hex}}"
                    )),
                )
            }
        },
    }
}

/// A change's contact data: `meta`'s hashes and the plain `contact`, with
/// the warnings of what was left out.
pub(crate) fn read_contact_data(
    meta: Option<&Value>,
    contact: Option<ContactBody>,
) -> (Option<ContactHashes>, Option<Contact>, Vec<String>) {
    let (hashes, meta_warning) = read_meta(meta);
    let mut warnings: Vec<String> = meta_warning.into_iter().collect();
    let contact = contact.map(|c| {
        let (contact, dropped) = read_contact(c, "");
        warnings.extend(dropped);
        contact
    });
    (hashes, contact, warnings)
}
