//! What the platforms' fakes check and answer alike: an event's id (and
//! the knobs' events to refuse), and the answer a drawn fault gives.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{Answer, Fault};

/// An event's `event_id`: present, 1 to `max` characters; `Err(missing)`
/// otherwise, and `Err(refused)` for one the knobs say to refuse (the
/// platform's message for an invalid event).
pub(crate) fn event_id<'a>(
    e: &'a Value,
    max: usize,
    reject: &[String],
    missing: &'static str,
    refused: &'static str,
) -> Result<&'a str, &'static str> {
    let id = e
        .get("event_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= max)
        .ok_or(missing)?;
    if reject.iter().any(|r| r == id) {
        return Err(refused);
    }
    Ok(id)
}

/// What a drawn fault answers before the request is read: the platform's
/// outage (`unavailable`) or throttle (`throttled`) answer, or a timeout
/// (its body is never read). `None`: the request goes on (a fault that
/// takes the events and leaves them unanswered is [`Inner::answered`]'s).
pub(crate) fn fault_answer(
    fault: Option<Fault>,
    unavailable: impl FnOnce() -> Answer,
    throttled: impl FnOnce() -> Answer,
) -> Option<Answer> {
    match fault {
        Some(Fault::Unavailable) => Some(unavailable()),
        Some(Fault::Throttled) => Some(throttled()),
        Some(Fault::Timeout(ms)) => Some(Answer {
            delay_ms: ms,
            ..Answer::new(StatusCode::GATEWAY_TIMEOUT, json!({"message": "timeout"}))
        }),
        _ => None,
    }
}
