//! TikTok's Events API 2.0 (`POST /open_api/v1.3/event/track/`): the
//! `Access-Token` header (code 40105 without a live one), `event_source`
//! and `event_source_id`, 1 to 1,000 events, TikTok's standard event
//! names, `event_time` in seconds no older than 7 days, hashed e-mail,
//! phone and external id, plain IP and user agent, and at least one
//! identifier. One bad event fails the whole request with code 40002.
//! TikTok answers HTTP 200 with its `code` (0: taken).

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{Accepted, Answer, Request, Shared, event_id, fault_answer, is_digest};

const PATH: &str = "/open_api/v1.3/event/track/";
const MAX_EVENTS: usize = 1_000;
const MAX_AGE_S: i64 = 7 * 86_400;
/// TikTok's standard events (its list of September 2025).
const EVENTS: [&str; 15] = [
    "AddPaymentInfo",
    "AddToCart",
    "AddToWishlist",
    "ApplicationApproval",
    "CompleteRegistration",
    "Contact",
    "Download",
    "InitiateCheckout",
    "Lead",
    "Purchase",
    "Schedule",
    "Search",
    "SubmitForm",
    "Subscribe",
    "ViewContent",
];

fn answer(code: i64, message: &str) -> Answer {
    Answer::new(
        StatusCode::OK,
        json!({"code": code, "message": message, "request_id": "fake-tiktok-request"}),
    )
}

/// Checks one event; `Err` is TikTok's message.
fn check_event(e: &Value, now_s: i64, reject: &[String]) -> Result<(String, String), &'static str> {
    let name = e
        .get("event")
        .and_then(Value::as_str)
        .filter(|n| EVENTS.contains(n))
        .ok_or("Invalid value for event: not a supported event")?;
    let time = e
        .get("event_time")
        .and_then(Value::as_i64)
        .ok_or("Invalid value for event_time: must be an integer in seconds")?;
    if time < now_s - MAX_AGE_S || time > now_s + 300 {
        return Err("Invalid value for event_time: out of range");
    }
    let id = event_id(
        e,
        256,
        reject,
        "Invalid value for event_id",
        "Invalid value for user: failed validation",
    )?;
    let user = e
        .get("user")
        .and_then(Value::as_object)
        .ok_or("Invalid value for user: required")?;
    for (key, value) in user {
        let ok = match key.as_str() {
            "email" | "phone" | "external_id" => is_digest(value),
            "ip" | "user_agent" | "ttclid" | "ttp" => value
                .as_str()
                .is_some_and(|s| !s.is_empty() && !is_digest(value)),
            _ => false,
        };
        if !ok {
            return Err("Invalid value for user: a field is malformed or unknown");
        }
    }
    if !user.keys().any(|k| {
        matches!(
            k.as_str(),
            "email" | "phone" | "external_id" | "ttclid" | "ttp"
        )
    }) {
        return Err("Invalid value for user: no identifier to match on");
    }
    if let Some(p) = e.get("properties") {
        let value_ok = p
            .get("value")
            .is_none_or(|v| v.as_f64().is_some_and(|v| v >= 0.0));
        let currency_ok = p.get("currency").is_none_or(|c| {
            c.as_str()
                .is_some_and(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase()))
        });
        if !value_ok || !currency_ok {
            return Err("Invalid value for properties");
        }
    }
    Ok((id.to_owned(), name.to_owned()))
}

pub(crate) fn handle(shared: &Shared, req: &Request<'_>, rest: &str) -> Option<Answer> {
    if rest != PATH || req.method != Method::POST {
        return None;
    }
    let mut inner = shared.lock();
    inner.count_request("tiktok");
    let token = req
        .headers
        .get("access-token")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !inner.tokens.contains(token) {
        return Some(answer(
            40105,
            "The access token is invalid or has been revoked.",
        ));
    }
    let fault = inner.draw_fault();
    if let Some(a) = fault_answer(
        fault,
        || {
            Answer::new(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"code": 50002, "message": "Service unavailable"}),
            )
        },
        || answer(40100, "Too many requests"),
    ) {
        return Some(a);
    }
    let Ok(body) = serde_json::from_slice::<Value>(req.body) else {
        return Some(answer(40002, "Invalid JSON"));
    };
    let source_ok = body
        .get("event_source")
        .and_then(Value::as_str)
        .is_some_and(|s| matches!(s, "web" | "app" | "offline" | "crm"));
    let pixel = body
        .get("event_source_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(str::to_owned);
    let (true, Some(pixel)) = (source_ok, pixel) else {
        return Some(answer(
            40002,
            "Invalid value for event_source_id: not a valid string.",
        ));
    };
    let events = body
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if events.is_empty() || events.len() > MAX_EVENTS {
        return Some(answer(40002, "Invalid value for data: 1 to 1000 events"));
    }
    let now_s = shared.now_s();
    let test = body
        .get("test_event_code")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut taken = vec![];
    for e in &events {
        match check_event(e, now_s, &inner.knobs.reject_event_ids) {
            Ok((id, name)) => taken.push(Accepted {
                platform: "tiktok",
                account: pixel.clone(),
                event_id: id,
                event_name: name,
                event: e.clone(),
                test: test.clone(),
            }),
            Err(message) => return Some(answer(40002, message)),
        }
    }
    let n = taken.len();
    inner.accepted.extend(taken);
    Some(inner.answered(fault, n, answer(0, "OK")))
}
