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
use crate::graph_error::GraphErrorKind;
use crate::leads::Applied;
use crate::pixels::PixelReady;
use crate::time::{DAY_MS, MINUTE_MS};

/// The events a site's pixel receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    Lead,
    QualifiedLead,
    Schedule,
    Purchase,
}

impl EventName {
    pub const ALL: [EventName; 4] = [
        EventName::Lead,
        EventName::QualifiedLead,
        EventName::Schedule,
        EventName::Purchase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Lead => "Lead",
            EventName::QualifiedLead => "QualifiedLead",
            EventName::Schedule => "Schedule",
            EventName::Purchase => "Purchase",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == value)
    }

    /// The events a board column may send (`Purchase` comes only from a
    /// recorded sale).
    pub fn parse_column_event(value: &str) -> Option<Self> {
        Self::parse(value).filter(|e| *e != EventName::Purchase)
    }
}

/// `sha256(leadId + ":" + eventName)`, lowercase hex: the same event of the
/// same lead always has the same id, which is what Meta deduplicates on.
pub fn event_id(lead_id: &str, event: EventName) -> String {
    sha256_hex(&format!("{lead_id}:{}", event.as_str()))
}

/// The events a change queues (before the once-per-lead check): the
/// seed's table. Nothing without `meta` or a ready pixel.
pub fn events_for(
    applied: &Applied,
    is_new_lead: bool,
    pixel: Option<PixelReady>,
    has_meta: bool,
    map: &BTreeMap<String, EventName>,
) -> Vec<EventName> {
    let Some(pixel) = pixel else {
        return vec![];
    };
    if !has_meta || !applied.accepted {
        return vec![];
    }
    let mut events = vec![];
    if is_new_lead && pixel.send_lead_event {
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
/// Meta refuses events older than this.
pub const MAX_EVENT_AGE_MS: i64 = 7 * DAY_MS;
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
            SendFailure::Unavailable => LastErrorCode::MetaUnavailable,
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

/// Decides after the `attempts`-th attempt failed at `now`.
pub fn after_failure(failure: SendFailure, attempts: i64, now: i64) -> AfterFailure {
    if failure.is_final() {
        return AfterFailure::Fail;
    }
    match retry_delay_ms(attempts) {
        Some(delay) => AfterFailure::RetryAt(now + delay),
        None => AfterFailure::Fail,
    }
}

/// An event is too old to send once Meta would refuse its time.
pub fn too_old(event_time: i64, now: i64) -> bool {
    now - event_time > MAX_EVENT_AGE_MS
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

/// A row that can no longer be sent, whatever Meta would say: too old for
/// Meta, out of attempts (the last was lost on the way), or without
/// contact data. Answers its `lastError`. The sender asks before sending
/// and the sweeper before sending a lost row again, with the attempts the
/// row will have counted by then.
pub fn doomed(event_time: i64, attempts: i64, has_hashes: bool, now: i64) -> Option<String> {
    if too_old(event_time, now) {
        Some(last_error(
            LastErrorCode::EventTooOld,
            "the event is older than 7 days",
        ))
    } else if out_of_attempts(attempts) {
        Some(last_error(
            LastErrorCode::Unexpected,
            "the last attempt was lost on the way",
        ))
    } else if !has_hashes {
        Some(last_error(
            LastErrorCode::Unexpected,
            "the conversion has no contact data",
        ))
    } else {
        None
    }
}

/// How one event's attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Sent,
    /// Failed for good, whatever the attempts left (`lastError`).
    Failed(String),
    /// A failed attempt: the schedule decides whether another follows.
    Attempt(SendFailure, String),
}

impl Verdict {
    /// An attempt that failed for a reason of ours, not Meta's.
    pub fn unexpected(why: &str) -> Self {
        Verdict::Attempt(
            SendFailure::Unexpected,
            last_error(LastErrorCode::Unexpected, why),
        )
    }
}

/// What to do with a request's events after Meta's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Every event of the request gets this verdict.
    All(Verdict),
    /// Meta called the request invalid and it holds more than one event:
    /// split it in halves until the invalid event stands alone.
    Split,
}

/// Meta's error on `POST /{pixel}/events` with `events` events, as a
/// verdict. One invalid event rejects the whole request, so a rejected
/// request of many is split rather than failed.
pub fn judge_error(
    kind: GraphErrorKind,
    subcode: Option<i64>,
    message: &str,
    events: usize,
) -> Judged {
    use LastErrorCode as C;
    let attempt =
        |f: SendFailure, why: &str| Judged::All(Verdict::Attempt(f, last_error(f.code(), why)));
    match kind {
        // The pixel does not exist or the token cannot reach it.
        GraphErrorKind::Other if subcode == Some(33) => {
            Judged::All(Verdict::Failed(last_error(C::PixelUnavailable, message)))
        }
        GraphErrorKind::Other if events > 1 => Judged::Split,
        GraphErrorKind::Other => Judged::All(Verdict::Failed(last_error(C::MetaRejected, message))),
        GraphErrorKind::TokenInvalid => attempt(SendFailure::TokenInvalid, message),
        GraphErrorKind::Permission => attempt(SendFailure::Permission, message),
        GraphErrorKind::Throttled => attempt(SendFailure::Unavailable, "Meta throttled the send"),
        GraphErrorKind::Transient | GraphErrorKind::TooMuchData => {
            attempt(SendFailure::Unavailable, message)
        }
    }
}

/// How an attempt ends, from its verdict and the attempts counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendEnd {
    Sent,
    Retry { at: i64, last_error: String },
    Failed { last_error: String },
}

/// The end a verdict gives the `attempts`-th attempt at `now`.
pub fn end_of(verdict: Verdict, attempts: i64, now: i64) -> SendEnd {
    match verdict {
        Verdict::Sent => SendEnd::Sent,
        Verdict::Failed(e) => SendEnd::Failed { last_error: e },
        Verdict::Attempt(f, e) => match after_failure(f, attempts, now) {
            AfterFailure::RetryAt(at) => SendEnd::Retry { at, last_error: e },
            AfterFailure::Fail => SendEnd::Failed { last_error: e },
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::contact::EMPTY_HASH;
    use crate::leads::tests::{change, lead};
    use crate::leads::{LeadChange, LeadState, Stage};
    use crate::time::utc_day;

    #[test]
    fn event_ids_are_stable_and_per_event() {
        let a = event_id("lead-1", EventName::Lead);
        assert_eq!(a, sha256_hex("lead-1:Lead"));
        assert_eq!(a.len(), 64);
        assert_ne!(a, event_id("lead-1", EventName::Purchase));
        assert_ne!(a, event_id("lead-2", EventName::Lead));
        assert_eq!(
            sha256_hex(""),
            EMPTY_HASH,
            "the empty-string digest is what we leave out"
        );
    }

    #[test]
    fn the_seed_table_row_by_row() {
        let map: BTreeMap<_, _> = [
            ("qualificado".to_owned(), EventName::QualifiedLead),
            ("agendado".to_owned(), EventName::Schedule),
            ("novo".to_owned(), EventName::Lead),
        ]
        .into();
        let on = Some(PixelReady {
            send_lead_event: true,
        });
        let off_lead = Some(PixelReady {
            send_lead_event: false,
        });
        let l = lead(None, 0);
        let ev = |lead: Option<&LeadState>, c: LeadChange<'_>, new: bool, px, meta| {
            events_for(&crate::leads::apply_change(lead, &c), new, px, meta, &map)
        };
        use EventName::*;
        // Purchase: a move to won with a value.
        assert_eq!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), Some(4599), None),
                false,
                on,
                true
            ),
            vec![Purchase]
        );
        // A won without a value sends nothing.
        assert!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), None, None),
                false,
                on,
                true
            )
            .is_empty()
        );
        // Lead: a new lead, only with sendLeadEvent.
        assert_eq!(
            ev(None, change(1, None, None, None), true, on, true),
            vec![Lead]
        );
        assert!(ev(None, change(1, None, None, None), true, off_lead, true).is_empty());
        // A column the map points at.
        assert_eq!(
            ev(
                Some(&l),
                change(1, None, None, Some("agendado")),
                false,
                off_lead,
                true
            ),
            vec![Schedule]
        );
        assert_eq!(
            ev(
                Some(&l),
                change(1, None, None, Some("qualificado")),
                false,
                off_lead,
                true
            ),
            vec![QualifiedLead]
        );
        // `qualified` alone sends nothing.
        assert!(
            ev(
                Some(&l),
                change(1, Some(Stage::Qualified), None, None),
                false,
                on,
                true
            )
            .is_empty()
        );
        // Lead both as a new lead and through a column: once.
        assert_eq!(
            ev(None, change(1, None, None, Some("novo")), true, on, true),
            vec![Lead]
        );
        // A sale moved into a mapped column: both.
        assert_eq!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), Some(10), Some("agendado")),
                false,
                on,
                true
            ),
            vec![Schedule, Purchase]
        );
        // Without meta, without a pixel: nothing.
        assert!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), Some(10), None),
                false,
                on,
                false
            )
            .is_empty()
        );
        assert!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), Some(10), None),
                false,
                None,
                true
            )
            .is_empty()
        );
        // A late move: nothing.
        let later = lead(None, 50);
        assert!(
            ev(
                Some(&later),
                change(1, Some(Stage::Won), Some(10), None),
                false,
                on,
                true
            )
            .is_empty()
        );
    }

    #[test]
    fn the_send_schedule() {
        use AfterFailure::*;
        let now = 1_000_000;
        assert_eq!(
            after_failure(SendFailure::Unavailable, 1, now),
            RetryAt(now + MINUTE_MS)
        );
        assert_eq!(
            after_failure(SendFailure::Unexpected, 2, now),
            RetryAt(now + 10 * MINUTE_MS)
        );
        assert_eq!(after_failure(SendFailure::Unavailable, 3, now), Fail);
        for f in [
            SendFailure::Rejected,
            SendFailure::Permission,
            SendFailure::TokenInvalid,
        ] {
            assert_eq!(after_failure(f, 1, now), Fail, "{f:?}");
        }
        assert!(!too_old(now, now + MAX_EVENT_AGE_MS));
        assert!(too_old(now, now + MAX_EVENT_AGE_MS + 1));
        assert_eq!(utc_day(DAY_MS + 5), DAY_MS);
        assert_eq!(utc_day(-1), -DAY_MS);
    }

    /// A pending row of lead `l`'s `Lead` event, to build on.
    pub(crate) fn row(attempts: i64, next: Option<i64>, lease: Option<i64>) -> Conversion {
        Conversion {
            site_id: "loja-x".into(),
            sk: "1#e".into(),
            event_id: "e".into(),
            event_name: EventName::Lead,
            lead_id: "l".into(),
            lead_key: "k".into(),
            event_time: 0,
            created_at: 0,
            status: ConversionStatus::Pending,
            attempts,
            next_attempt_at: next,
            lease_until: lease,
            value_cents: None,
            currency: None,
            sent_at: None,
            last_error: None,
            hashes: None,
            work_at: None,
        }
    }

    #[test]
    fn a_claimed_row_waits_for_its_attempt_and_its_lease() {
        let now = 100_000;
        assert_eq!(wait_before_claim(&row(0, None, None), now), None);
        assert_eq!(wait_before_claim(&row(0, Some(now), Some(now)), now), None);
        assert_eq!(
            wait_before_claim(&row(1, Some(now + 5_000), None), now),
            Some(5_000)
        );
        assert_eq!(
            wait_before_claim(&row(1, Some(now), Some(now + 60_000)), now),
            Some(60_000),
            "the later of the two"
        );
        assert_eq!(
            wait_before_claim(&row(1, Some(now + 10), None), now),
            Some(1_000),
            "at least a second"
        );
    }

    #[test]
    fn doomed_rows_are_too_old_out_of_attempts_or_without_contact_data() {
        let now = 10 * DAY_MS;
        let ok = |t, a, h| doomed(t, a, h, now);
        assert_eq!(ok(now, 1, true), None);
        assert_eq!(ok(now, MAX_ATTEMPTS, true), None, "the third attempt goes");
        let code =
            |v: Option<String>| v.map(|e| e.split(':').next().unwrap_or_default().to_owned());
        assert_eq!(
            code(ok(now - MAX_EVENT_AGE_MS - 1, 1, true)).as_deref(),
            Some("EVENT_TOO_OLD")
        );
        assert_eq!(
            code(ok(now, MAX_ATTEMPTS + 1, true)).as_deref(),
            Some("UNEXPECTED")
        );
        assert_eq!(code(ok(now, 1, false)).as_deref(), Some("UNEXPECTED"));
        assert!(
            ok(now - MAX_EVENT_AGE_MS - 1, MAX_ATTEMPTS + 1, true)
                .is_some_and(|e| e.starts_with("EVENT_TOO_OLD")),
            "too old wins"
        );
    }

    #[test]
    fn each_of_metas_answers_is_one_verdict() {
        use GraphErrorKind::*;
        fn failed(code: &str, j: Judged) -> bool {
            matches!(j, Judged::All(Verdict::Failed(e)) if e.starts_with(code))
        }
        assert_eq!(judge_error(Other, None, "bad", 10), Judged::Split);
        assert!(failed("META_REJECTED", judge_error(Other, None, "bad", 1)));
        assert!(failed(
            "PIXEL_UNAVAILABLE",
            judge_error(Other, Some(33), "no pixel", 10)
        ));
        let attempt = |j: Judged| match j {
            Judged::All(Verdict::Attempt(f, e)) => (f, e),
            other => panic!("{other:?}"),
        };
        let table = [
            (
                TokenInvalid,
                SendFailure::TokenInvalid,
                "META_TOKEN_INVALID: m",
            ),
            (
                Permission,
                SendFailure::Permission,
                "META_PERMISSION_MISSING: m",
            ),
            (
                Throttled,
                SendFailure::Unavailable,
                "META_UNAVAILABLE: Meta throttled the send",
            ),
            (Transient, SendFailure::Unavailable, "META_UNAVAILABLE: m"),
            (TooMuchData, SendFailure::Unavailable, "META_UNAVAILABLE: m"),
        ];
        for (kind, failure, error) in table {
            assert_eq!(
                attempt(judge_error(kind, None, "m", 5)),
                (failure, error.to_owned()),
                "{kind:?}"
            );
        }
        let now = 1_000;
        assert_eq!(end_of(Verdict::Sent, 1, now), SendEnd::Sent);
        assert_eq!(
            end_of(
                Verdict::Attempt(SendFailure::Unavailable, "x".into()),
                1,
                now
            ),
            SendEnd::Retry {
                at: now + MINUTE_MS,
                last_error: "x".into()
            }
        );
        assert_eq!(
            end_of(
                Verdict::Attempt(SendFailure::Unavailable, "x".into()),
                3,
                now
            ),
            SendEnd::Failed {
                last_error: "x".into()
            }
        );
        assert_eq!(
            end_of(
                Verdict::Attempt(SendFailure::Permission, "x".into()),
                1,
                now
            ),
            SendEnd::Failed {
                last_error: "x".into()
            }
        );
    }
}
