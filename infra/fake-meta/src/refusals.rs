//! What the fake refuses a call with a user token for, as Meta does: a
//! dead token, a token the knobs told to die, a throttle with Meta's usage
//! headers, a 5xx; otherwise the usage header every answer then carries.

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::json;

use crate::server::Shared;
use crate::wire::meta_error;

/// Meta's answer to an expired token (code 190, subcode 463).
fn expired() -> Box<Response> {
    Box::new(meta_error(
        StatusCode::BAD_REQUEST,
        190,
        Some(463),
        "Error validating access token: Session has expired",
        false,
    ))
}

/// What Meta refuses a call with a user token for, in order: a dead token,
/// a token told to die, a throttle, a 5xx. Otherwise the usage header every
/// answer then carries, if one is set.
pub(crate) fn refuse(
    shared: &Shared,
    token: &str,
    path: &str,
) -> Result<Option<String>, Box<Response>> {
    let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
    if token.contains("invalid") || inner.dead_tokens.contains(token) {
        return Err(expired());
    }
    if let Some(left) = inner.knobs.token_dies_after.as_mut() {
        if *left == 0 {
            inner.dead_tokens.insert(token.to_owned());
            inner.knobs.token_dies_after = None;
            return Err(expired());
        }
        *left -= 1;
    }
    if let Some(t) = inner.knobs.throttle.as_mut()
        && t.remaining > 0
        && t.only_path
            .as_ref()
            .is_none_or(|p| path.contains(p.as_str()))
    {
        t.remaining -= 1;
        let (code, regain) = (t.code, t.regain_minutes);
        let mut r = meta_error(
            StatusCode::BAD_REQUEST,
            code,
            None,
            "User request limit reached",
            true,
        );
        let buc = json!({"1029384756": [{"type": "ads_insights", "call_count": 100, "total_cputime": 100, "total_time": 100, "estimated_time_to_regain_access": regain}]});
        r.headers_mut().insert(
            "x-business-use-case-usage",
            HeaderValue::from_str(&buc.to_string()).expect("ascii"),
        );
        return Err(Box::new(r));
    }
    if inner.knobs.fail_5xx > 0 {
        inner.knobs.fail_5xx -= 1;
        return Err(Box::new(meta_error(
            StatusCode::SERVICE_UNAVAILABLE,
            2,
            None,
            "Service temporarily unavailable",
            true,
        )));
    }
    if let Some(pct) = inner.knobs.usage_pct {
        return Ok(Some(
            json!({"call_count": pct, "total_cputime": pct / 2, "total_time": pct / 2}).to_string(),
        ));
    }
    Ok(None)
}
