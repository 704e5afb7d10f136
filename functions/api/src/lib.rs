//! The HTTP API behind API Gateway (HTTP API, JWT authorizer): sites, the
//! Meta connection (a pasted token or Facebook Login), ad account links,
//! pixels, the board and leads, sync requests, status, spend and reports.
//!
//! One handler routes every request; each route parses its input strictly,
//! checks the caller's scope and grant, and answers JSON in camelCase with
//! money in cents and times in epoch milliseconds. Errors follow the
//! Conventions: `{"error":{"code","message"}}`, the field named.

pub mod auth;
mod cohorts;
mod connect;
mod contact;
pub mod error;
pub mod input;
mod routes;
mod views;

pub use routes::{ROUTES, Route};

use adtrail_domain::time::SharedClock;
use adtrail_meta::GraphClient;
use adtrail_store::Store;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;
use tracing::Instrument;

use crate::auth::Caller;
use crate::error::ApiError;

/// What every request needs, built once per process.
#[derive(Debug, Clone)]
pub struct Api {
    pub store: Store,
    pub graph: GraphClient,
    /// The other platforms, for the credential checks they offer.
    pub platforms: adtrail_platforms::PlatformClient,
    pub clock: SharedClock,
    pub limits: ReportLimits,
    /// The stack's `LeadAds` parameter: Meta's form leads are taken.
    pub lead_ads: bool,
    /// How the identity provider names the scopes and the site grant.
    pub identity: auth::Identity,
}

/// Time kept back from the invocation's deadline for what a request does
/// after its last call to Meta or another platform: sealing with KMS and
/// writing to DynamoDB, the SDK's retries included. The calls get the
/// rest (25 of the API's 30 seconds), so a platform that hangs fails the
/// call, not the invocation, and the route answers while it still can
/// (`META_UNAVAILABLE`), where Lambda would otherwise cut it mid-way and
/// API Gateway answer a bare `503`.
pub const CALLS_RESERVE: std::time::Duration = std::time::Duration::from_secs(5);

impl Api {
    /// This stack's clients, their platform calls bound to `deadline`.
    pub fn within(&self, deadline: Option<adtrail_http::Deadline>) -> Self {
        Self {
            graph: self.graph.within(deadline),
            platforms: self.platforms.within(deadline),
            ..self.clone()
        }
    }
}

/// The read budgets of one report. Fixed in production; tests lower them to
/// reach the edges without writing 12,000 rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportLimits {
    /// Lead rollup rows, over all the report's sites; past it the report
    /// fails with `REPORT_INCOMPLETE`.
    pub rollup_rows: usize,
    /// Site-day spend rows; past it every spend is `null`.
    pub day_rows: usize,
    /// Per-ad spend rows; past it the campaign tree's spend is `null`.
    pub ad_rows: usize,
}

impl Default for ReportLimits {
    fn default() -> Self {
        Self {
            rollup_rows: 12_000,
            day_rows: 12_000,
            ad_rows: 12_000,
        }
    }
}

/// A JSON answer with a status.
pub(crate) fn json<T: Serialize>(status: u16, body: &T) -> Result<Response<Body>, ApiError> {
    let text = serde_json::to_string(body).map_err(|e| ApiError {
        code: adtrail_domain::error_codes::ErrorCode::Internal,
        message: "an internal error occurred".into(),
        cause: Some(Box::new(e)),
    })?;
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(text))
        .expect("static response parts"))
}

/// The Lambda handler: never fails; every error is an answer.
///
/// # Errors
/// None: the `Result` is the runtime's contract.
pub async fn handle(api: &Api, req: Request) -> Result<Response<Body>, lambda_http::Error> {
    let method = req.method().as_str().to_owned();
    let decoded = routes::segments(req.raw_http_path());
    let segments: Vec<&str> = decoded.iter().map(AsRef::as_ref).collect();
    // The route's shape names it in the logs: ids are not secrets, but the
    // route is what one searches logs by.
    let name = routes::find(&method, &segments).map_or("-", |r| r.path);
    // API Gateway's id of the request, which it returns to the caller in
    // the `apigw-requestid` header and writes in the access log: a caller
    // who quotes it finds the function's lines too.
    let apigw_request_id = match req.request_context_ref() {
        Some(lambda_http::request::RequestContext::ApiGatewayV2(ctx)) => {
            ctx.request_id.as_deref().unwrap_or("-")
        }
        _ => "-",
    };
    let span = tracing::info_span!(
        "request",
        method = %method,
        route = %name,
        apigw_request_id = %apigw_request_id
    );
    // The invocation's deadline, less the time its writes may need after
    // its last platform call.
    let deadline = req
        .lambda_context_ref()
        .and_then(|c| adtrail_http::Deadline::from_lambda_ms(c.deadline, CALLS_RESERVE));
    let api = &api.within(deadline);
    let answer = async {
        // A browser's preflight (the template routes it here outside the
        // authorizer, having no token): nothing to do but agree. API
        // Gateway adds the CORS headers for the origins the stack allows.
        if method == "OPTIONS" && req.headers().contains_key("access-control-request-method") {
            return Ok(Response::builder()
                .status(204)
                .body(Body::Empty)
                .expect("a static answer"));
        }
        if let Some(route) = routes::find(&method, &segments).filter(|r| r.public) {
            return routes::public(api, &req, route).await;
        }
        let caller = Caller::from_request(&req, &api.identity)?;
        routes::route(api, &caller, &req, &method, &segments).await
    }
    .instrument(span)
    .await;
    Ok(answer.unwrap_or_else(ApiError::into_response))
}
