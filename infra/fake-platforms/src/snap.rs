//! Snap's Conversions API v3 (`POST /v3/{pixelId}/events`, and
//! `/events/validate`: checked, not processed): the token in the query
//! (401 without a live one), 1 to 1,000 events, Snap's event names,
//! `WEB`/`MOBILE_APP`/`OFFLINE`, `event_time` in seconds no older than 7
//! days, `event_source_url` for web events, hashed `em`/`ph`/names/ids,
//! `em` or `ph` or both IP and user agent, a purchase's price and
//! currency. One invalid event fails the request (400 `INVALID`).

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{Accepted, Answer, Request, Shared, event_id, fault_answer, hashed_list};

const MAX_EVENTS: usize = 1_000;
const MAX_AGE_S: i64 = 7 * 86_400;
const EVENTS: [&str; 16] = [
    "PURCHASE",
    "SIGN_UP",
    "ADD_CART",
    "START_CHECKOUT",
    "VIEW_CONTENT",
    "SEARCH",
    "RESERVE",
    "PAGE_VIEW",
    "SAVE",
    "SUBSCRIBE",
    "START_TRIAL",
    "CUSTOM_EVENT_1",
    "CUSTOM_EVENT_2",
    "CUSTOM_EVENT_3",
    "CUSTOM_EVENT_4",
    "CUSTOM_EVENT_5",
];

fn invalid(reason: &str) -> Answer {
    Answer::new(
        StatusCode::BAD_REQUEST,
        json!({"status": "INVALID", "reason": reason}),
    )
}

fn check_event(e: &Value, now_s: i64, reject: &[String]) -> Result<(String, String), &'static str> {
    let name = e
        .get("event_name")
        .and_then(Value::as_str)
        .filter(|n| EVENTS.contains(n))
        .ok_or("Invalid event_name")?;
    let source = e
        .get("action_source")
        .and_then(Value::as_str)
        .filter(|s| matches!(*s, "WEB" | "MOBILE_APP" | "OFFLINE"))
        .ok_or("Invalid action_source")?;
    let time = e
        .get("event_time")
        .and_then(Value::as_i64)
        .ok_or("Timestamp invalid or out of range")?;
    if time < now_s - MAX_AGE_S || time > now_s + 300 {
        return Err("Timestamp invalid or out of range");
    }
    if source == "WEB" && e.get("event_source_url").and_then(Value::as_str).is_none() {
        return Err("Missing required field: event_source_url");
    }
    let id = event_id(
        e,
        usize::MAX,
        reject,
        "Missing required field: event_id",
        "Unhashed PII",
    )?;
    let user = e
        .get("user_data")
        .and_then(Value::as_object)
        .ok_or("Missing required field: user_data")?;
    for (key, value) in user {
        let ok = match key.as_str() {
            "em" | "ph" | "fn" | "ln" | "external_id" => hashed_list(value),
            "client_ip_address" | "client_user_agent" | "sc_click_id" | "sc_cookie1" => {
                value.as_str().is_some_and(|s| !s.is_empty())
            }
            _ => false,
        };
        if !ok {
            return Err("Unhashed PII");
        }
    }
    let pair = user.contains_key("client_ip_address") && user.contains_key("client_user_agent");
    if !(user.contains_key("em") || user.contains_key("ph") || pair) {
        return Err("Insufficient PII");
    }
    if name == "PURCHASE" {
        let c = e.get("custom_data");
        let priced = c
            .and_then(|c| c.get("value"))
            .and_then(Value::as_f64)
            .is_some()
            && c.and_then(|c| c.get("currency"))
                .and_then(Value::as_str)
                .is_some();
        if !priced {
            return Err("Purchase events require price and currency");
        }
    }
    Ok((id.to_owned(), name.to_owned()))
}

pub(crate) fn handle(shared: &Shared, req: &Request<'_>, rest: &str) -> Option<Answer> {
    let rest = rest.strip_prefix("/v3/")?;
    let (pixel, validate) = match rest.strip_suffix("/events/validate") {
        Some(p) => (p, true),
        None => (rest.strip_suffix("/events")?, false),
    };
    if req.method != Method::POST {
        return None;
    }
    let mut inner = shared.lock();
    inner.count_request("snap");
    let token = url::form_urlencoded::parse(req.query.as_bytes())
        .find(|(k, _)| k == "access_token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if !inner.tokens.contains(&token) {
        return Some(Answer::new(
            StatusCode::UNAUTHORIZED,
            json!({"status": "INVALID", "reason": "Unauthorized"}),
        ));
    }
    let fault = inner.draw_fault();
    let error = |status| Answer::new(status, json!({"status": "ERROR"}));
    if let Some(a) = fault_answer(
        fault,
        || error(StatusCode::INTERNAL_SERVER_ERROR),
        || error(StatusCode::TOO_MANY_REQUESTS),
    ) {
        return Some(a);
    }
    let Ok(body) = serde_json::from_slice::<Value>(req.body) else {
        return Some(invalid("Invalid JSON"));
    };
    let events = body
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if events.is_empty() || events.len() > MAX_EVENTS {
        return Some(invalid("data must hold 1 to 1000 events"));
    }
    let now_s = shared.now_s();
    let mut taken = vec![];
    for (i, e) in events.iter().enumerate() {
        match check_event(e, now_s, &inner.knobs.reject_event_ids) {
            Ok((id, name)) => taken.push(Accepted {
                platform: "snap",
                account: pixel.to_owned(),
                event_id: id,
                event_name: name,
                event: e.clone(),
                test: validate.then(|| "validate".to_owned()),
            }),
            Err(reason) => {
                return Some(Answer::new(
                    StatusCode::BAD_REQUEST,
                    json!({"status": "INVALID", "reason": reason, "event": i}),
                ));
            }
        }
    }
    let n = taken.len();
    inner.accepted.extend(taken);
    let ok = Answer::new(
        StatusCode::OK,
        json!({"status": "VALID", "reason": "events received"}),
    );
    Some(inner.answered(fault, n, ok))
}
