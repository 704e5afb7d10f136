//! A posted event as checked, and each destination's row of it: the
//! contact reduced to that platform's hashes, keyed so the rows of one
//! event never share a key.

use super::{ActionSource, Contact, match_data};
use crate::capi::{EventName, conversion_ref};
use crate::contact::{ContactHashes, sha256_hex};
use crate::identifiers::Platform;

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

/// One destination's row of a posted event: what the store writes, the
/// contact already reduced to that platform's [`ContactHashes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// The destination's slug (`meta` for the pixel): with `event_id`, what
    /// makes the row once-only.
    pub slug: String,
    /// `None`: the site's pixel.
    pub destination: Option<String>,
    /// The destination's platform: its hashes', and its age limit's.
    pub platform: Platform,
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
    /// The lead whose change queued it (`None`: a posted event).
    pub lead: Option<RowLead>,
}

/// The lead a row belongs to, so the row lists under the lead and leaves
/// with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowLead {
    pub lead_id: String,
    pub lead_key: String,
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
            platform,
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
            lead: None,
        }
    }
}
