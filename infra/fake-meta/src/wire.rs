//! Graph API's wire format, shared by every endpoint of the fake: the
//! version in paths, the error body, and paged lists with their `next`
//! links.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::knobs::Knobs;
use crate::server::Shared;

pub(crate) const VERSION: &str = "v25.0";

pub(crate) fn meta_error(
    status: StatusCode,
    code: i64,
    subcode: Option<i64>,
    message: &str,
    transient: bool,
) -> Response {
    let mut err = json!({"message": message, "type": "OAuthException", "code": code, "is_transient": transient, "fbtrace_id": "AfakeTrace"});
    if let Some(sub) = subcode {
        err["error_subcode"] = json!(sub);
    }
    (status, Json(json!({ "error": err }))).into_response()
}

pub(crate) fn bad_param(message: &str) -> Response {
    meta_error(StatusCode::BAD_REQUEST, 100, None, message, false)
}

#[allow(clippy::result_large_err)] // the error is the answer itself
pub(crate) fn page_size(
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    default: usize,
) -> Result<usize, Response> {
    let limit = match query.get("limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=5_000).contains(l))
            .ok_or_else(|| bad_param("Invalid parameter: limit"))?,
        None => default,
    };
    Ok(knobs.max_page.map_or(limit, |m| limit.min(m)))
}

/// A page of `items` from `after`, with `paging.next` while more remain.
pub(crate) fn paged(
    shared: &Shared,
    path: &str,
    query: &BTreeMap<String, String>,
    items: Vec<Value>,
    size: usize,
    token: &str,
) -> Response {
    let after = query
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let page: Vec<Value> = items.iter().skip(after).take(size).cloned().collect();
    let mut answer = json!({ "data": page });
    if after + size < items.len() {
        // As Meta does: the `next` link repeats the token that asked.
        let mut q = query.clone();
        q.insert("after".into(), (after + size).to_string());
        q.insert("access_token".into(), token.to_owned());
        let qs = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(q.iter())
            .finish();
        answer["paging"] = json!({"cursors": {"after": (after + size).to_string()}, "next": format!("{}/{VERSION}/{path}?{qs}", shared.base_url)});
    }
    Json(answer).into_response()
}

/// Meta's answer for an object that does not exist or the token cannot
/// see (code 100, subcode 33).
pub(crate) fn no_object(message: &str) -> Response {
    meta_error(StatusCode::BAD_REQUEST, 100, Some(33), message, false)
}
