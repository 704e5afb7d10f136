//! What became of an attempt: Meta's answer (or its silence) as a
//! [`Verdict`], and the verdict, with the attempts counted, as the row's
//! [`SendEnd`]. The sender asks here; nothing else decides it.

use super::{AfterFailure, MAX_EVENT_AGE_MS, SendFailure, after_failure};
use crate::error_codes::{LastErrorCode, last_error};
use crate::graph_error::GraphErrorKind;

/// How one event's attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Sent,
    /// No request carried the event: the sender's deadline came first.
    /// The attempt is given back and the event goes again at once.
    NotSent,
    /// Failed for good, whatever the attempts left (`lastError`).
    Failed(String),
    /// A failed attempt: the schedule decides whether another follows.
    Attempt(SendFailure, String),
    /// Meta throttled the request: a failed attempt whose next one waits
    /// at least until Meta says access comes back.
    Throttled {
        wait_ms: i64,
        error: String,
    },
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
    /// The platform answered event by event (Pinterest): a verdict each,
    /// in the request's order.
    PerEvent(Vec<Verdict>),
}

/// Meta's error on `POST /{pixel}/events` with `events` events, as a
/// verdict. One invalid event rejects the whole request, so a rejected
/// request of many is split rather than failed.
pub fn judge_error(
    kind: GraphErrorKind,
    subcode: Option<i64>,
    message: &str,
    events: usize,
    regain_ms: Option<i64>,
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
        GraphErrorKind::Throttled => Judged::All(Verdict::Throttled {
            // Bounded: no wait outlives the event's 7 days.
            wait_ms: regain_ms.unwrap_or(0).clamp(0, MAX_EVENT_AGE_MS),
            error: last_error(C::MetaUnavailable, "Meta throttled the send"),
        }),
        GraphErrorKind::Transient | GraphErrorKind::TooMuchData => {
            attempt(SendFailure::Unavailable, message)
        }
    }
}

/// Meta's answer to a request that succeeded: sent only when Meta says it
/// received every event of it; otherwise an attempt that failed (the same
/// `event_id`s go again, and Meta drops what it already has).
pub fn judge_receipt(received: i64, sent: usize) -> Verdict {
    if usize::try_from(received).is_ok_and(|r| r == sent) {
        Verdict::Sent
    } else {
        Verdict::Attempt(
            SendFailure::Unavailable,
            last_error(
                LastErrorCode::MetaUnavailable,
                &format!("Meta received {received} of {sent} events"),
            ),
        )
    }
}

/// A request that left and got no answer: every event of it may be at
/// Meta's. An attempt that goes again with the same `event_id`s.
pub fn judge_unanswered(message: &str) -> Verdict {
    Verdict::Attempt(
        SendFailure::Unanswered,
        last_error(SendFailure::Unanswered.code(), message),
    )
}

/// How an attempt ends, from its verdict and the attempts counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendEnd {
    Sent,
    /// The attempt counted at the claim is given back, the lease let go.
    Released,
    Retry {
        at: i64,
        last_error: String,
        /// Meta may hold the event: the row is marked so.
        unsure: bool,
    },
    Failed {
        last_error: String,
    },
}

/// The end a verdict gives the `attempts`-th attempt at `now`.
pub fn end_of(verdict: Verdict, attempts: i64, unsure: bool, now: i64) -> SendEnd {
    match verdict {
        Verdict::Sent => SendEnd::Sent,
        Verdict::NotSent => SendEnd::Released,
        Verdict::Failed(e) => SendEnd::Failed { last_error: e },
        Verdict::Throttled { wait_ms, error } => {
            match end_of(
                Verdict::Attempt(SendFailure::Unavailable, error),
                attempts,
                unsure,
                now,
            ) {
                SendEnd::Retry {
                    at,
                    last_error,
                    unsure,
                } => SendEnd::Retry {
                    at: at.max(now + wait_ms),
                    last_error,
                    unsure,
                },
                other => other,
            }
        }
        Verdict::Attempt(f, e) => match after_failure(f, attempts, unsure, now) {
            AfterFailure::RetryAt(at) => SendEnd::Retry {
                at,
                last_error: e,
                unsure: unsure || f == SendFailure::Unanswered,
            },
            AfterFailure::Fail => SendEnd::Failed { last_error: e },
        },
    }
}
