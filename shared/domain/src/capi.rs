//! The Conversions API's rules, without I/O: the events a site's pixel
//! receives and their ids, which events a lead change queues (the seed's
//! table), a conversion and its status, and the send policy the
//! `capi-sender` and the sweeper share: the schedule (three attempts, 1 then
//! 10 minutes apart, a 15-minute lease, a 7-day cap), when a claimed row may
//! be taken again, which rows can no longer be sent, and what each of
//! Meta's answers makes of an attempt.

use std::collections::BTreeMap;

use crate::contact::{ContactHashes, sha256_hex};
use crate::error_codes::{LastErrorCode, last_error};
use crate::events::ActionSource;
use crate::identifiers::Platform;
use crate::leadads::meta_lead_id;
use crate::leads::Applied;
use crate::time::{DAY_MS, MINUTE_MS};

/// The events adtrail sends: the four a lead's changes queue (the seed's
/// table) and the shop's funnel events a storefront posts. Each platform's
/// name for each is in [`crate::destinations::platform_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    Lead,
    QualifiedLead,
    Schedule,
    Purchase,
    CompleteRegistration,
    AddToCart,
    InitiateCheckout,
    ViewContent,
    Search,
}

impl EventName {
    pub const ALL: [EventName; 9] = [
        EventName::Lead,
        EventName::QualifiedLead,
        EventName::Schedule,
        EventName::Purchase,
        EventName::CompleteRegistration,
        EventName::AddToCart,
        EventName::InitiateCheckout,
        EventName::ViewContent,
        EventName::Search,
    ];

    /// The events a lead's changes queue.
    pub const LEAD_EVENTS: [EventName; 4] = [
        EventName::Lead,
        EventName::QualifiedLead,
        EventName::Schedule,
        EventName::Purchase,
    ];

    /// The name adtrail stores and answers (Meta's standard names, and
    /// `QualifiedLead`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Lead => "Lead",
            EventName::QualifiedLead => "QualifiedLead",
            EventName::Schedule => "Schedule",
            EventName::Purchase => "Purchase",
            EventName::CompleteRegistration => "CompleteRegistration",
            EventName::AddToCart => "AddToCart",
            EventName::InitiateCheckout => "InitiateCheckout",
            EventName::ViewContent => "ViewContent",
            EventName::Search => "Search",
        }
    }

    /// The name a storefront posts (`POST /v1/sites/{siteId}/events`).
    pub fn wire(self) -> &'static str {
        match self {
            EventName::Lead => "lead",
            EventName::QualifiedLead => "qualified_lead",
            EventName::Schedule => "schedule",
            EventName::Purchase => "purchase",
            EventName::CompleteRegistration => "complete_registration",
            EventName::AddToCart => "add_to_cart",
            EventName::InitiateCheckout => "initiate_checkout",
            EventName::ViewContent => "view_content",
            EventName::Search => "search",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == value)
    }

    pub fn parse_wire(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.wire() == value)
    }

    /// The events a board column may send (`Purchase` comes only from a
    /// recorded sale; the shop's funnel events never from a board).
    pub fn parse_column_event(value: &str) -> Option<Self> {
        Self::parse(value).filter(|e| {
            matches!(
                e,
                EventName::Lead | EventName::QualifiedLead | EventName::Schedule
            )
        })
    }
}

/// `sha256(leadId + ":" + eventName)`, lowercase hex: the same event of the
/// same lead always has the same id, which is what Meta deduplicates on.
pub fn event_id(lead_id: &str, event: EventName) -> String {
    sha256_hex(&format!("{lead_id}:{}", event.as_str()))
}

/// The events a change causes (before the once-per-lead check): the
/// seed's table. Nothing without contact data to match a person on; where
/// they go (the pixel, the destinations) is the caller's to decide.
pub fn events_for(
    applied: &Applied,
    is_new_lead: bool,
    send_lead_event: bool,
    has_contact: bool,
    map: &BTreeMap<String, EventName>,
) -> Vec<EventName> {
    if !has_contact || !applied.accepted {
        return vec![];
    }
    let mut events = vec![];
    if is_new_lead && send_lead_event {
        events.push(EventName::Lead);
    }
    if let Some(event) = applied.entered.as_ref().and_then(|c| map.get(c)) {
        events.push(*event);
    }
    if applied.sale_cents.is_some() {
        events.push(EventName::Purchase);
    }
    events.sort();
    events.dedup();
    events
}

/// A conversion's reference within its site: `<createdAt>#<eventId>`, the
/// time zero-padded, so a site's conversions sort by creation time, then
/// event id (the history's order and its cursor). The store keys the row
/// by it.
pub fn conversion_ref(created_at: i64, event_id: &str) -> String {
    format!("{created_at:013}#{event_id}")
}

/// Parses a reference back into `(createdAt, eventId)`.
pub fn parse_conversion_ref(reference: &str) -> Option<(i64, &str)> {
    let (at, id) = reference.split_once('#')?;
    Some((at.parse().ok()?, id))
}

/// Attempts a conversion gets in all.
pub const MAX_ATTEMPTS: i64 = 3;
/// How long a send holds its attempt: a duplicate delivery or a second
/// sender never sends the event meanwhile.
pub const SEND_LEASE_MS: i64 = 15 * MINUTE_MS;
/// A pending attempt this late was lost on the way; the sweeper sends it
/// again.
pub const LOST_AFTER_MS: i64 = 15 * MINUTE_MS;
/// Meta refuses events older than this (save a physical store's).
pub const MAX_EVENT_AGE_MS: i64 = 7 * DAY_MS;

/// How old an event `platform` still takes, by where it happened:
/// - Meta: 7 days, 62 for a physical store's (its documentation).
/// - Google: the conversion action's click-through window, at most 90
///   days; adtrail does not know each action's, so it sends up to 90 and
///   Google's `EXPIRED_EVENT` fails the event.
/// - TikTok, Pinterest and Snap: 7 days. None of the three documents a
///   limit; Snap's v3 field and two peers say 7 days, TikTok's is 28 by
///   one peer, Pinterest refuses old timestamps without saying how old. 7
///   days is what all three are known to take (`platforms.md` §0).
pub fn max_event_age_ms(platform: Platform, source: Option<ActionSource>) -> i64 {
    match (platform, source) {
        (Platform::Meta, Some(ActionSource::PhysicalStore)) => 62 * DAY_MS,
        (Platform::Google, _) => 90 * DAY_MS,
        _ => MAX_EVENT_AGE_MS,
    }
}
/// The most events one `POST /{pixel}/events` carries.
pub const MAX_EVENTS_PER_REQUEST: usize = 1_000;

/// The wait before the next attempt after `attempts` failed ones: 1 minute,
/// then 10; `None` when none is left.
pub fn retry_delay_ms(attempts: i64) -> Option<i64> {
    match attempts {
        1 => Some(MINUTE_MS),
        2 => Some(10 * MINUTE_MS),
        _ => None,
    }
}

/// Why a send did not go through, as the rules sort it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendFailure {
    /// Meta called the event invalid.
    Rejected,
    Permission,
    TokenInvalid,
    /// Meta failed or throttled.
    Unavailable,
    /// The request left and no answer came back (a timeout, a dropped
    /// connection): Meta may have taken the events.
    Unanswered,
    /// Not an answer from Meta: the key, the store, a bug.
    Unexpected,
}

impl SendFailure {
    /// The `lastError` code an attempt that failed this way records.
    pub fn code(self) -> LastErrorCode {
        match self {
            SendFailure::Rejected => LastErrorCode::MetaRejected,
            SendFailure::Permission => LastErrorCode::MetaPermissionMissing,
            SendFailure::TokenInvalid => LastErrorCode::MetaTokenInvalid,
            SendFailure::Unavailable | SendFailure::Unanswered => LastErrorCode::MetaUnavailable,
            SendFailure::Unexpected => LastErrorCode::Unexpected,
        }
    }
    /// Failures no retry can mend.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SendFailure::Rejected | SendFailure::Permission | SendFailure::TokenInvalid
        )
    }
}

/// What becomes of a conversion after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    RetryAt(i64),
    Fail,
}

/// Decides after the `attempts`-th attempt failed at `now`. A row Meta
/// may already hold (`unsure`: an attempt went unanswered or was lost
/// after it left) is never failed for running out of attempts: it goes
/// again with the same `event_id`, which Meta deduplicates, every
/// [`UNSURE_RETRY_MS`] until Meta answers or the event is too old.
pub fn after_failure(failure: SendFailure, attempts: i64, unsure: bool, now: i64) -> AfterFailure {
    if failure.is_final() {
        return AfterFailure::Fail;
    }
    let unsure = unsure || failure == SendFailure::Unanswered;
    match retry_delay_ms(attempts) {
        Some(delay) => AfterFailure::RetryAt(now + delay),
        None if unsure => AfterFailure::RetryAt(now + UNSURE_RETRY_MS),
        None => AfterFailure::Fail,
    }
}

/// How often a row Meta may already hold goes again once its attempts
/// are spent.
pub const UNSURE_RETRY_MS: i64 = 10 * MINUTE_MS;

/// An event is too old to send once its platform would refuse its time
/// (`max_age_ms`: [`max_event_age_ms`]).
pub fn too_old(event_time: i64, max_age_ms: i64, now: i64) -> bool {
    now - event_time > max_age_ms
}

/// Where a conversion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConversionStatus {
    Pending,
    Sent,
    Failed,
}

impl ConversionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversionStatus::Pending => "pending",
            ConversionStatus::Sent => "sent",
            ConversionStatus::Failed => "failed",
        }
    }
    pub fn parse(v: &str) -> Option<Self> {
        match v {
            "pending" => Some(ConversionStatus::Pending),
            "sent" => Some(ConversionStatus::Sent),
            "failed" => Some(ConversionStatus::Failed),
            _ => None,
        }
    }
}

/// A conversion as stored: one event of one lead, sent at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    pub site_id: String,
    /// The store's key of the row within the site (the send queue's
    /// messages carry it).
    pub sk: String,
    pub event_id: String,
    pub event_name: EventName,
    pub lead_id: String,
    pub lead_key: String,
    pub event_time: i64,
    pub created_at: i64,
    pub status: ConversionStatus,
    pub attempts: i64,
    pub next_attempt_at: Option<i64>,
    pub lease_until: Option<i64>,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
    pub sent_at: Option<i64>,
    pub last_error: Option<String>,
    /// Present while pending; erased once delivery ends.
    pub hashes: Option<ContactHashes>,
    pub work_at: Option<i64>,
    /// A send batch watches it for the sweeper (a posted batch's row): it
    /// has no `work` entry of its own to leave when it ends.
    pub in_send_batch: bool,
    /// An attempt left and got no answer (or was lost after it left):
    /// Meta may hold the event, so it is never failed for attempts.
    pub unsure: bool,
    /// Not counted yet: a row posted on its own is written with no counter
    /// moves (a transaction would bill it twice), and the first sender to
    /// end an attempt of it counts it queued along with its end.
    pub uncounted: bool,
    /// The destination's slug; `None`: the site's pixel.
    pub destination: Option<String>,
    /// Where the event happened (`website`, …); `None`: a lead's change
    /// (sent as `chat`).
    pub action_source: Option<String>,
    /// The page of a website event.
    pub source_url: Option<String>,
    /// The host's order id (Google's `transactionId`, the others'
    /// `order_id`).
    pub order_id: Option<String>,
    /// The platform it goes to (the pixel's: Meta).
    pub platform: Platform,
}

impl Conversion {
    /// How old it may be when sent: its platform's rule for where it
    /// happened.
    pub fn max_age_ms(&self) -> i64 {
        let source = self.action_source.as_deref().and_then(ActionSource::parse);
        max_event_age_ms(self.platform, source)
    }
}

/// When a pending row may be claimed again: after its next attempt is due
/// and the lease of the attempt before has run out. `None`: now. Answers at
/// least a second ahead, so a message put back never spins.
pub fn wait_before_claim(c: &Conversion, now: i64) -> Option<i64> {
    let free_at = c
        .next_attempt_at
        .unwrap_or(now)
        .max(c.lease_until.unwrap_or(now));
    (free_at > now).then(|| (free_at - now).max(1_000))
}

/// Whether the attempt just claimed or found late is the last one lost on
/// the way: it was counted (`attempts` already includes it) and none is
/// left.
pub fn out_of_attempts(attempts: i64) -> bool {
    attempts > MAX_ATTEMPTS
}

/// A row that can no longer be sent, whatever its platform would say: too
/// old for its platform, out of attempts (the last was lost on the way), or
/// without contact data. Answers its `lastError`. The sender asks before
/// sending and the sweeper before sending a lost row again, with the
/// attempts the row will have counted by then (`attempts`) and whether an
/// attempt went unanswered (`unsure`).
pub fn doomed(c: &Conversion, attempts: i64, unsure: bool, now: i64) -> Option<String> {
    let max_age = c.max_age_ms();
    if too_old(c.event_time, max_age, now) {
        Some(last_error(
            LastErrorCode::EventTooOld,
            &format!(
                "the event is older than {} days, the most {} takes",
                max_age / DAY_MS,
                c.platform.label()
            ),
        ))
    } else if out_of_attempts(attempts) && !unsure {
        Some(last_error(
            LastErrorCode::Unexpected,
            "the last attempt was lost on the way",
        ))
    } else if c.hashes.is_none() && meta_lead_id(&c.lead_key).is_none() {
        Some(last_error(
            LastErrorCode::Unexpected,
            "the conversion has no contact data",
        ))
    } else {
        None
    }
}

mod verdict;
pub use verdict::{Judged, SendEnd, Verdict, end_of, judge_error, judge_receipt, judge_unanswered};
pub mod platforms;

#[cfg(test)]
mod doomed_tests;
#[cfg(test)]
pub(crate) mod tests;
