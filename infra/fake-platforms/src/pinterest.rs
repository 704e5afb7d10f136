//! Pinterest's Conversions API v5 (`POST
//! /v5/ad_accounts/{adAccountId}/events`): a bearer token (401 code 2
//! without a live one), 1 to 1,000 events, Pinterest's event names and
//! action sources, hashed arrays, plain IP, user agent and click id, the
//! value as a decimal string, and `em` or both IP and user agent. Pinterest
//! answers per event: 200 when all were processed, 422 (code 953) with
//! each event's status otherwise. `?test=true` is checked, not recorded
//! by Pinterest (the fake records it, flagged, for the tests).

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{Accepted, Answer, Inner, Request, Shared, event_id, fault_answer, hashed_list};

const MAX_EVENTS: usize = 1_000;
const MAX_AGE_S: i64 = 7 * 86_400;
const EVENTS: [&str; 15] = [
    "add_payment_info",
    "add_to_cart",
    "add_to_wishlist",
    "app_install",
    "checkout",
    "custom",
    "initiate_checkout",
    "lead",
    "page_visit",
    "search",
    "signup",
    "subscribe",
    "view_category",
    "view_content",
    "watch_video",
];

/// Checks one event; `Err` is Pinterest's message for it.
fn check_event(e: &Value, now_s: i64, reject: &[String]) -> Result<(String, String), &'static str> {
    let name = e
        .get("event_name")
        .and_then(Value::as_str)
        .filter(|n| EVENTS.contains(n))
        .ok_or("Invalid event_name parameter.")?;
    let source_ok = e
        .get("action_source")
        .and_then(Value::as_str)
        .is_some_and(|s| matches!(s, "app_android" | "app_ios" | "web" | "offline"));
    if !source_ok {
        return Err("Invalid action_source parameter.");
    }
    let time = e
        .get("event_time")
        .and_then(Value::as_i64)
        .ok_or("Invalid event_time parameter.")?;
    if time < now_s - MAX_AGE_S {
        return Err("Invalid event_timestamp parameter. Given timestamp is in the past.");
    }
    if time > now_s + 300 {
        return Err("Invalid event_timestamp parameter. Given timestamp is in the future.");
    }
    let id = event_id(
        e,
        usize::MAX,
        reject,
        "Invalid event_id parameter.",
        "Invalid user_data parameter.",
    )?;
    let user = e
        .get("user_data")
        .and_then(Value::as_object)
        .ok_or("Missing user_data parameter.")?;
    for (key, value) in user {
        let ok = match key.as_str() {
            "em" | "ph" | "fn" | "ln" | "external_id" | "hashed_maids" => hashed_list(value),
            "client_ip_address" | "client_user_agent" | "click_id" => {
                value.as_str().is_some_and(|s| !s.is_empty())
            }
            _ => false,
        };
        if !ok {
            return Err("Invalid user_data parameter.");
        }
    }
    let plain_pair =
        user.contains_key("client_ip_address") && user.contains_key("client_user_agent");
    if !(user.contains_key("em") || user.contains_key("hashed_maids") || plain_pair) {
        return Err(
            "user_data must contain em, hashed_maids, or client_ip_address and client_user_agent.",
        );
    }
    if let Some(custom) = e.get("custom_data") {
        let value_ok = custom
            .get("value")
            .is_none_or(|v| v.as_str().is_some_and(|s| s.parse::<f64>().is_ok()));
        if !value_ok {
            return Err("Invalid custom_data.value parameter: a string holding a number.");
        }
    }
    Ok((id.to_owned(), name.to_owned()))
}

/// Checks each event, keeping those Pinterest takes: each one's status,
/// and how many were processed.
fn take_events(
    inner: &mut Inner,
    account: &str,
    events: &[Value],
    now_s: i64,
    test: bool,
) -> (Vec<Value>, usize) {
    let mut statuses = vec![];
    let mut processed = 0;
    for e in events {
        match check_event(e, now_s, &inner.knobs.reject_event_ids) {
            Ok((id, name)) => {
                processed += 1;
                inner.accepted.push(Accepted {
                    platform: "pinterest",
                    account: account.to_owned(),
                    event_id: id,
                    event_name: name,
                    event: e.clone(),
                    test: test.then(|| "test=true".to_owned()),
                });
                statuses.push(
                    json!({"status": "processed", "error_message": null, "warning_message": null}),
                );
            }
            Err(message) => statuses.push(
                json!({"status": "failed", "error_message": message, "warning_message": null}),
            ),
        }
    }
    (statuses, processed)
}

pub(crate) fn handle(shared: &Shared, req: &Request<'_>, rest: &str) -> Option<Answer> {
    let account = rest
        .strip_prefix("/v5/ad_accounts/")?
        .strip_suffix("/events")?
        .to_owned();
    if req.method != Method::POST || !account.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut inner = shared.lock();
    inner.count_request("pinterest");
    let token = req
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !inner.tokens.contains(token) {
        return Some(Answer::new(
            StatusCode::UNAUTHORIZED,
            json!({"code": 2, "message": "Authentication failed."}),
        ));
    }
    let fault = inner.draw_fault();
    if let Some(a) = fault_answer(
        fault,
        || {
            Answer::new(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"code": 4197, "message": "The endpoint has been ramped down."}),
            )
        },
        || {
            Answer::new(
                StatusCode::TOO_MANY_REQUESTS,
                json!({"code": 8, "message": "Rate limit exceeded."}),
            )
        },
    ) {
        return Some(a);
    }
    let test = req.query.contains("test=true");
    let Ok(body) = serde_json::from_slice::<Value>(req.body) else {
        return Some(Answer::new(
            StatusCode::BAD_REQUEST,
            json!({"code": 4196, "message": "Invalid JSON."}),
        ));
    };
    let events = body
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if events.is_empty() || events.len() > MAX_EVENTS {
        return Some(Answer::new(
            StatusCode::BAD_REQUEST,
            json!({"code": 4196, "message": "data must hold 1 to 1000 events."}),
        ));
    }
    let (statuses, processed) = take_events(&mut inner, &account, &events, shared.now_s(), test);
    let counts = json!({
        "num_events_received": events.len(),
        "num_events_processed": processed,
        "events": statuses,
    });
    let answer = if processed == events.len() {
        Answer::new(StatusCode::OK, counts)
    } else {
        Answer::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"code": 953, "message": "The action could not be processed properly due to some or all data provided being invalid.", "details": counts}),
        )
    };
    Some(inner.answered(fault, processed, answer))
}
