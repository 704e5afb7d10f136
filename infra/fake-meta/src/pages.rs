//! The sample agency's Pages as Lead Ads sees them: the app's subscription
//! to a Page's `leadgen` field, made and removed with the Page's own token
//! (a user token or another Page's is refused, as Meta refuses it).

use axum::Json;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::agency::{SAMPLE_PAGES, page_token};
use crate::server::Shared;
use crate::wire::meta_error;

/// Meta's answer to a Page's edge called without that Page's own token
/// (a user token, another Page's): `(#210)`.
pub(crate) fn page_token_refused(page: &str, token: &str) -> Option<Response> {
    (token != page_token(page)).then(|| {
        meta_error(
            StatusCode::FORBIDDEN,
            210,
            None,
            "(#210) A page access token is required to request this resource.",
            false,
        )
    })
}

/// `POST` or `DELETE /{page}/subscribed_apps`, or `None` when the path is
/// not a Page's subscription.
pub(crate) fn subscribed_apps(
    shared: &Shared,
    method: &Method,
    rest: &str,
    token: &str,
    fields: Option<&str>,
) -> Option<Response> {
    let page = rest.strip_suffix("/subscribed_apps")?;
    if !SAMPLE_PAGES.iter().any(|(id, _, _)| *id == page) {
        return None;
    }
    if let Some(refused) = page_token_refused(page, token) {
        return Some(refused);
    }
    let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
    match *method {
        Method::POST => {
            if fields.is_none_or(|f| !f.split(',').any(|f| f == "leadgen")) {
                return Some(meta_error(
                    StatusCode::BAD_REQUEST,
                    100,
                    None,
                    "(#100) Param subscribed_fields must be one of the Page's fields",
                    false,
                ));
            }
            inner.subscribed_pages.insert(page.to_owned());
        }
        Method::DELETE => {
            inner.subscribed_pages.remove(page);
        }
        _ => return None,
    }
    Some(Json(json!({"success": true})).into_response())
}
