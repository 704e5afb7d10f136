//! The route table.

mod board;
mod connections;
mod conversions;
mod leads;
mod leads_report;
mod links;
mod login;
mod pixels;
mod reads;
mod reports;
mod sites;

use lambda_http::{Body, Request, Response};

use crate::Api;
use crate::auth::Caller;
use crate::error::ApiError;

pub(crate) async fn route(
    api: &Api,
    caller: &Caller,
    req: &Request,
    method: &str,
    path: &str,
) -> Result<Response<Body>, ApiError> {
    // Each segment decoded on its own (`%3A` is `:`), after the split, so
    // an encoded `/` never makes a segment. Undecodable bytes stay encoded
    // and fail the id's check.
    let decoded: Vec<std::borrow::Cow<'_, str>> = path
        .trim_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .unwrap_or(std::borrow::Cow::Borrowed(s))
        })
        .collect();
    let segments: Vec<&str> = decoded.iter().map(AsRef::as_ref).collect();
    match (method, segments.as_slice()) {
        ("PUT", ["v1", "sites", site]) => sites::put_site(api, caller, req, site).await,
        ("PUT", ["v1", "meta", "connections", owner]) => {
            connections::put_connection(api, caller, req, owner).await
        }
        ("POST", ["v1", "meta", "connections", owner, "login"]) => {
            login::login(api, caller, req, owner).await
        }
        ("POST", ["v1", "meta", "connections", owner, "refresh"]) => {
            connections::refresh_connection(api, caller, owner).await
        }
        ("DELETE", ["v1", "meta", "connections", owner]) => {
            connections::delete_connection(api, caller, owner).await
        }
        (
            "GET",
            [
                "v1",
                "sites",
                site,
                "ad-accounts",
                account,
                "unlink-preview",
            ],
        ) => links::unlink_preview(api, caller, site, account).await,
        ("GET", ["v1", "meta", "connections", owner]) => {
            connections::get_connection(api, caller, owner).await
        }
        ("PUT", ["v1", "sites", site, "ad-accounts", account]) => {
            links::link(api, caller, req, site, account).await
        }
        ("DELETE", ["v1", "sites", site, "ad-accounts", account]) => {
            links::unlink(api, caller, req, site, account).await
        }
        ("POST", ["v1", "sites", site, "sync"]) => links::sync_now(api, caller, site).await,
        ("PUT", ["v1", "sites", site, "pixel"]) => pixels::put_pixel(api, caller, req, site).await,
        ("DELETE", ["v1", "sites", site, "pixel"]) => {
            pixels::delete_pixel(api, caller, req, site).await
        }
        ("PUT", ["v1", "sites", site, "pipeline"]) => {
            board::put_pipeline(api, caller, req, site).await
        }
        ("PUT", ["v1", "sites", site, "event-map"]) => {
            board::put_event_map(api, caller, req, site).await
        }
        ("GET", ["v1", "sites", site, "event-map"]) => {
            board::get_event_map(api, caller, req, site).await
        }
        ("POST", ["v1", "sites", site, "leads"]) => {
            leads::record_lead(api, caller, req, site).await
        }
        ("POST", ["v1", "sites", site, "leads", lead, "stage"]) => {
            leads::move_lead(api, caller, req, site, lead).await
        }
        ("DELETE", ["v1", "sites", site, "leads", lead]) => {
            leads::delete_lead(api, caller, site, lead).await
        }
        ("GET", ["v1", "sites", site, "conversions"]) => {
            conversions::list(api, caller, req, site).await
        }
        ("GET", ["v1", "meta", "status"]) => reads::status(api, caller, req).await,
        ("GET", ["v1", "reports", "daily"]) => reports::daily(api, caller, req).await,
        ("GET", ["v1", "reports", "leads"]) => leads_report::leads(api, caller, req).await,
        ("GET", ["v1", "sites", site, "spend"]) => reads::spend(api, caller, req, site).await,
        _ => {
            let allow = allowed_methods(&segments);
            if allow.is_empty() {
                Err(ApiError::not_found("no such route"))
            } else {
                Ok(method_not_allowed(method, &allow))
            }
        }
    }
}

/// Every route: its method and path, `{…}` standing for one id. The table
/// the `405` answers read, checked against the template's routes and the
/// OpenAPI document by the template tests.
pub const ROUTES: [(&str, &str); 23] = [
    ("PUT", "/v1/sites/{siteId}"),
    ("PUT", "/v1/meta/connections/{ownerKey}"),
    ("GET", "/v1/meta/connections/{ownerKey}"),
    ("DELETE", "/v1/meta/connections/{ownerKey}"),
    ("POST", "/v1/meta/connections/{ownerKey}/login"),
    ("POST", "/v1/meta/connections/{ownerKey}/refresh"),
    ("PUT", "/v1/sites/{siteId}/ad-accounts/{adAccountId}"),
    ("DELETE", "/v1/sites/{siteId}/ad-accounts/{adAccountId}"),
    (
        "GET",
        "/v1/sites/{siteId}/ad-accounts/{adAccountId}/unlink-preview",
    ),
    ("POST", "/v1/sites/{siteId}/sync"),
    ("PUT", "/v1/sites/{siteId}/pixel"),
    ("DELETE", "/v1/sites/{siteId}/pixel"),
    ("PUT", "/v1/sites/{siteId}/pipeline"),
    ("PUT", "/v1/sites/{siteId}/event-map"),
    ("GET", "/v1/sites/{siteId}/event-map"),
    ("POST", "/v1/sites/{siteId}/leads"),
    ("POST", "/v1/sites/{siteId}/leads/{leadKey}/stage"),
    ("DELETE", "/v1/sites/{siteId}/leads/{leadKey}"),
    ("GET", "/v1/sites/{siteId}/conversions"),
    ("GET", "/v1/sites/{siteId}/spend"),
    ("GET", "/v1/meta/status"),
    ("GET", "/v1/reports/daily"),
    ("GET", "/v1/reports/leads"),
];

/// The methods a path answers to.
fn allowed_methods(segments: &[&str]) -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = ROUTES
        .iter()
        .filter(|(_, shape)| {
            let parts: Vec<&str> = shape.trim_matches('/').split('/').collect();
            parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(segments)
                    .all(|(p, s)| p.starts_with('{') || p == s)
        })
        .map(|(m, _)| *m)
        .collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

/// `405` with the `Allow` header: the path exists, the method does not.
fn method_not_allowed(method: &str, allow: &[&str]) -> Response<Body> {
    let mut response = ApiError::new(
        adtrail_domain::error_codes::ErrorCode::MethodNotAllowed,
        format!(
            "method: {} is not allowed here; use {}",
            method.chars().take(16).collect::<String>(),
            allow.join(", ")
        ),
    )
    .into_response();
    if let Ok(v) = lambda_http::http::HeaderValue::from_str(&allow.join(", ")) {
        response.headers_mut().insert("allow", v);
    }
    response
}
