//! Facebook Login for Business in the fake: `POST /oauth/access_token`
//! (a code for a token, and a short-lived user token for a long-lived one)
//! and `GET /debug_token`, with the seed's fake codes: one containing
//! `invalid` is refused like a used code, one containing `user-token` gives
//! a short-lived user token (2 hours), any other a system user token that
//! never expires and whose answer says nothing of its lifetime (so the
//! client asks `/debug_token`). A code works once.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::wire::meta_error;

/// The fake's Meta app. The local stack stores these in Secrets Manager
/// as an operator would.
pub const FAKE_APP_ID: &str = "700000000000001";
pub const FAKE_APP_SECRET: &str = "fake-app-secret-0123456789abcdef";
/// The token the app's webhook subscription is verified with.
pub const FAKE_WEBHOOK_VERIFY_TOKEN: &str = "fake-verify-token-5f1c2a";

/// A short-lived user token lives 2 hours; a long-lived one 60 days.
const SHORT_LIVED_S: i64 = 2 * 3600;
const LONG_LIVED_S: i64 = 60 * 86_400;

fn tag(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

fn app_refused(form: &BTreeMap<String, String>) -> Option<Response> {
    if form.get("client_id").map(String::as_str) != Some(FAKE_APP_ID) {
        return Some(meta_error(
            StatusCode::BAD_REQUEST,
            101,
            None,
            "Error validating application. Invalid application ID.",
            false,
        ));
    }
    if form.get("client_secret").map(String::as_str) != Some(FAKE_APP_SECRET) {
        return Some(meta_error(
            StatusCode::BAD_REQUEST,
            1,
            None,
            "Error validating client secret.",
            false,
        ));
    }
    None
}

/// `POST /oauth/access_token` with a form body. `used` holds the codes
/// already traded; `fail_exchange` refuses the long-lived trade.
pub(crate) fn access_token(
    form: &BTreeMap<String, String>,
    used: &mut std::collections::HashSet<String>,
    fail_exchange: bool,
) -> Response {
    if let Some(refused) = app_refused(form) {
        return refused;
    }
    if form.get("grant_type").map(String::as_str) == Some("fb_exchange_token") {
        let Some(short) = form.get("fb_exchange_token") else {
            return meta_error(
                StatusCode::BAD_REQUEST,
                100,
                None,
                "Missing fb_exchange_token",
                false,
            );
        };
        if fail_exchange || !short.starts_with("EAAU-") {
            return meta_error(
                StatusCode::BAD_REQUEST,
                190,
                None,
                "Error validating access token: the token cannot be exchanged",
                false,
            );
        }
        return Json(json!({
            "access_token": format!("EAAL-long-{}", tag(short)),
            "token_type": "bearer",
            "expires_in": LONG_LIVED_S,
        }))
        .into_response();
    }
    let (Some(code), Some(redirect)) = (form.get("code"), form.get("redirect_uri")) else {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            None,
            "Missing code or redirect_uri parameter",
            false,
        );
    };
    if redirect.is_empty() || code.contains("invalid") || !used.insert(code.clone()) {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(36_009),
            "This authorization code has been used.",
            false,
        );
    }
    if code.contains("user-token") {
        Json(json!({
            "access_token": format!("EAAU-user-{}", tag(code)),
            "token_type": "bearer",
            "expires_in": SHORT_LIVED_S,
        }))
        .into_response()
    } else {
        Json(json!({
            "access_token": format!("EAAS-system-{}", tag(code)),
            "token_type": "bearer",
        }))
        .into_response()
    }
}

/// `GET /debug_token?input_token=…` with the app token (`id|secret`) as the
/// bearer.
pub(crate) fn debug_token(
    query: &BTreeMap<String, String>,
    app_token: &str,
    now_ms: i64,
) -> Response {
    if app_token != format!("{FAKE_APP_ID}|{FAKE_APP_SECRET}") {
        return meta_error(
            StatusCode::BAD_REQUEST,
            190,
            None,
            "Invalid OAuth access token - Cannot parse access token",
            false,
        );
    }
    let Some(token) = query.get("input_token") else {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            None,
            "Missing input_token",
            false,
        );
    };
    let now_s = now_ms / 1000;
    let (kind, expires_at) = if token.starts_with("EAAS-") {
        ("SYSTEM_USER", 0)
    } else if token.starts_with("EAAU-") {
        ("USER", now_s + SHORT_LIVED_S)
    } else if token.starts_with("EAAL-") {
        ("USER", now_s + LONG_LIVED_S)
    } else {
        ("USER", 0)
    };
    Json(json!({"data": {
        "app_id": FAKE_APP_ID,
        "type": kind,
        "application": "adtrail (fake)",
        "expires_at": expires_at,
        "is_valid": !token.contains("invalid"),
        "user_id": crate::agency::ME_ID,
    }}))
    .into_response()
}
