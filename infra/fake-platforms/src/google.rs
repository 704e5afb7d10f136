//! Google's OAuth token endpoint (`POST /token`, a refresh token or a
//! service account's assertion, `google_sa`, traded for an access token
//! good for an hour; `invalid_grant` for one it does not know) and the Data Manager's `POST /v1/events:ingest`: a live
//! access token (401 `UNAUTHENTICATED` otherwise), 1 to 10 destinations
//! (a Google Ads operating account of 10 digits, a conversion action),
//! 1 to 2,000 events each naming a destination, a transaction id, an RFC
//! 3339 timestamp, at most 10 hex-encoded hashed identifiers. One invalid
//! event fails the whole request (400 `INVALID_ARGUMENT`).
//! `validateOnly` is checked, not ingested (recorded, flagged).

use std::collections::HashSet;

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{Accepted, Answer, Inner, Request, Shared, fault_answer, google_sa, is_digest};

/// RFC 7523's grant: a service account's signed assertion.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The OAuth client and refresh token the fake knows from the start.
pub const GOOGLE_CLIENT_ID: &str = "google-client-0001";
pub const GOOGLE_CLIENT_SECRET: &str = "google-secret-0001";
pub const GOOGLE_REFRESH_TOKEN: &str = "1//google-refresh-0001";

const MAX_EVENTS: usize = 2_000;
const MAX_DESTINATIONS: usize = 10;
const TOKEN_LIFE_S: i64 = 3_600;

fn error(status: StatusCode, code: &str, message: &str) -> Answer {
    Answer::new(
        status,
        json!({"error": {"code": status.as_u16(), "message": message, "status": code}}),
    )
}

/// `POST /token`.
pub(crate) fn token(shared: &Shared, req: &Request<'_>, rest: &str) -> Option<Answer> {
    if rest != "/token" || req.method != Method::POST {
        return None;
    }
    let form: std::collections::HashMap<String, String> =
        url::form_urlencoded::parse(req.body).into_owned().collect();
    let mut inner = shared.lock();
    inner.token_grants += 1;
    let field = |k: &str| form.get(k).map(String::as_str).unwrap_or("");
    let refused = |error: &str, description: &str| {
        Some(Answer::new(
            StatusCode::BAD_REQUEST,
            json!({"error": error, "error_description": description}),
        ))
    };
    match field("grant_type") {
        "refresh_token" => {
            let known = inner.tokens.contains(&format!(
                "{}|{}|{}",
                field("client_id"),
                field("client_secret"),
                field("refresh_token")
            ));
            if !known {
                return refused("invalid_grant", "Token has been expired or revoked.");
            }
        }
        JWT_BEARER => {
            if let Err((error, description)) =
                google_sa::verify(field("assertion"), &inner.service_accounts, shared.now_s())
            {
                return refused(error, description);
            }
        }
        _ => return refused("unsupported_grant_type", "Invalid grant_type."),
    }
    let access = format!("ya29.fake-{}", inner.token_grants);
    let expires = shared.now_s() + TOKEN_LIFE_S;
    inner.access_tokens.insert(access.clone(), expires);
    Some(Answer::new(
        StatusCode::OK,
        json!({"access_token": access, "expires_in": TOKEN_LIFE_S, "token_type": "Bearer",
               "scope": "https://www.googleapis.com/auth/datamanager"}),
    ))
}

fn ten_digits(v: Option<&Value>) -> bool {
    v.and_then(Value::as_str)
        .is_some_and(|s| s.len() == 10 && s.bytes().all(|b| b.is_ascii_digit()))
}

fn check_destinations(body: &Value) -> Result<HashSet<String>, &'static str> {
    let destinations = body
        .get("destinations")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty() && d.len() <= MAX_DESTINATIONS)
        .ok_or("destinations: 1 to 10 are required")?;
    let mut refs = HashSet::new();
    for d in destinations {
        let op = d.get("operatingAccount");
        let op_ok = op
            .and_then(|o| o.get("accountType"))
            .and_then(Value::as_str)
            == Some("GOOGLE_ADS")
            && ten_digits(op.and_then(|o| o.get("accountId")));
        let action_ok = d
            .get("productDestinationId")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
        let reference = d.get("reference").and_then(Value::as_str);
        match (op_ok, action_ok, reference) {
            (true, true, Some(r)) => {
                refs.insert(r.to_owned());
            }
            _ => return Err("destinations: an invalid destination"),
        }
    }
    Ok(refs)
}

fn check_event(
    e: &Value,
    refs: &HashSet<String>,
    now_s: i64,
    reject: &[String],
) -> Result<String, &'static str> {
    let id = e
        .get("transactionId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("events.transactionId is required")?;
    if reject.iter().any(|r| r == id) {
        return Err("events.userData: an invalid user identifier");
    }
    let at = e
        .get("eventTimestamp")
        .and_then(Value::as_str)
        .and_then(rfc3339_seconds)
        .ok_or("events.eventTimestamp: not an RFC 3339 timestamp")?;
    if at > now_s + 300 {
        return Err("events.eventTimestamp: in the future");
    }
    let named = e
        .get("destinationReferences")
        .and_then(Value::as_array)
        .is_some_and(|r| {
            !r.is_empty()
                && r.iter()
                    .all(|x| x.as_str().is_some_and(|x| refs.contains(x)))
        });
    if !named {
        return Err("events.destinationReferences: names no destination of the request");
    }
    let source_ok = e.get("eventSource").is_none_or(|s| {
        s.as_str()
            .is_some_and(|s| matches!(s, "WEB" | "APP" | "IN_STORE" | "PHONE" | "OTHER"))
    });
    if !source_ok {
        return Err("events.eventSource: invalid");
    }
    if let Some(user) = e.get("userData") {
        let ids = user
            .get("userIdentifiers")
            .and_then(Value::as_array)
            .filter(|ids| !ids.is_empty() && ids.len() <= 10)
            .ok_or("events.userData.userIdentifiers: 1 to 10")?;
        for id in ids {
            let ok = match id.as_object() {
                Some(o) if o.len() == 1 => o.iter().all(|(k, v)| {
                    matches!(k.as_str(), "emailAddress" | "phoneNumber") && is_digest(v)
                }),
                _ => false,
            };
            if !ok {
                return Err("events.userData: an invalid user identifier");
            }
        }
    }
    if let Some(v) = e.get("conversionValue") {
        let currency_ok = e
            .get("currency")
            .and_then(Value::as_str)
            .is_some_and(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()));
        if v.as_f64().is_none_or(|v| v < 0.0) || !currency_ok {
            return Err("events.conversionValue: a value needs its currency");
        }
    }
    Ok(id.to_owned())
}

/// Epoch seconds of an RFC 3339 timestamp.
fn rfc3339_seconds(t: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|d| d.timestamp())
}

/// The events Google takes, each checked; the first it refuses refuses
/// the whole request.
fn take_events(
    events: &[Value],
    refs: &HashSet<String>,
    account: &str,
    now_s: i64,
    validate: bool,
    inner: &Inner,
) -> Result<Vec<Accepted>, &'static str> {
    let mut taken = vec![];
    for e in events {
        let id = check_event(e, refs, now_s, &inner.knobs.reject_event_ids)?;
        taken.push(Accepted {
            platform: "google",
            account: account.to_owned(),
            event_id: id,
            event_name: e["destinationReferences"][0]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            event: e.clone(),
            test: validate.then(|| "validateOnly".to_owned()),
        });
    }
    Ok(taken)
}

/// Google's answer to an outage.
fn unavailable() -> Answer {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        "UNAVAILABLE",
        "The service is unavailable.",
    )
}

/// Google's answer to a throttled caller.
fn exhausted() -> Answer {
    error(
        StatusCode::TOO_MANY_REQUESTS,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded.",
    )
}

/// `POST /v1/events:ingest`.
pub(crate) fn ingest(shared: &Shared, req: &Request<'_>, rest: &str) -> Option<Answer> {
    if rest != "/v1/events:ingest" || req.method != Method::POST {
        return None;
    }
    let mut inner = shared.lock();
    inner.count_request("google");
    let bearer = req
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let live = inner
        .access_tokens
        .get(bearer)
        .is_some_and(|expires| *expires > shared.now_s());
    if !live {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "UNAUTHENTICATED",
            "Request had invalid authentication credentials.",
        ));
    }
    let fault = inner.draw_fault();
    if let Some(a) = fault_answer(fault, unavailable, exhausted) {
        return Some(a);
    }
    let invalid = |m: &str| Some(error(StatusCode::BAD_REQUEST, "INVALID_ARGUMENT", m));
    let Ok(body) = serde_json::from_slice::<Value>(req.body) else {
        return invalid("Invalid JSON payload.");
    };
    let refs = match check_destinations(&body) {
        Ok(r) => r,
        Err(m) => return invalid(m),
    };
    let events = body
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if events.is_empty() || events.len() > MAX_EVENTS {
        return invalid("events: 1 to 2000 are required");
    }
    let hex = body.get("encoding").and_then(Value::as_str) == Some("HEX");
    if !hex && events.iter().any(|e| e.get("userData").is_some()) {
        return invalid("encoding: required when user data is sent");
    }
    let validate = body
        .get("validateOnly")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let account = body["destinations"][0]["operatingAccount"]["accountId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let taken = match take_events(&events, &refs, &account, shared.now_s(), validate, &inner) {
        Ok(taken) => taken,
        Err(m) => return invalid(m),
    };
    let n = taken.len();
    inner.accepted.extend(taken);
    let ok = Answer::new(
        StatusCode::OK,
        json!({"requestId": format!("fake-request-{}", inner.requests)}),
    );
    Some(inner.answered(fault, n, ok))
}
