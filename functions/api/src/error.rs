//! The API's errors: a code from the Conventions and a message in plain
//! words naming the field, never a secret and never an internal cause.

use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_meta::GraphError;
use adtrail_store::StoreError;
use lambda_http::{Body, Response};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error("{code:?}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// Kept for the log line, never for the answer.
    #[source]
    pub cause: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            cause: None,
        }
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }
    /// The site a path names is not stored.
    pub fn no_site() -> Self {
        Self::not_found("siteId: no such site")
    }
    /// A report's lead rollups ran past their budget.
    pub fn report_incomplete() -> Self {
        Self::new(
            ErrorCode::ReportIncomplete,
            "the report's leads run past 12000 rollup rows: ask for fewer sites or days",
        )
    }

    /// The answer: `{"error":{"code","message"}}` with the code's status.
    pub fn into_response(self) -> Response<Body> {
        if self.code == ErrorCode::Internal {
            tracing::error!(error = %self, cause = ?self.cause.as_ref().map(|c| chain(c.as_ref())), "request failed");
        } else {
            tracing::info!(code = self.code.as_str(), "request refused");
        }
        let body = json!({"error": {"code": self.code.as_str(), "message": self.message}});
        Response::builder()
            .status(self.code.http_status())
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("static response parts")
    }
}

/// An error's whole cause chain, for logs.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let code = match e {
            StoreError::SealingKey(_) => ErrorCode::SealingKeyUnavailable,
            ref e if e.is_transient() => ErrorCode::StoreUnavailable,
            _ => ErrorCode::Internal,
        };
        let message = match code {
            ErrorCode::SealingKeyUnavailable => {
                "the sealing key (KMS) is unavailable; try again later"
            }
            ErrorCode::StoreUnavailable => {
                "the database stayed busy through every retry; no write was left half-done, and the request is safe to repeat"
            }
            _ => "an internal error occurred",
        };
        Self {
            code,
            message: message.into(),
            cause: Some(Box::new(e)),
        }
    }
}

impl From<GraphError> for ApiError {
    fn from(e: GraphError) -> Self {
        let (code, message) = match e.kind {
            GraphErrorKind::TokenInvalid => (
                ErrorCode::MetaTokenInvalid,
                "Meta refused the access token (expired, revoked or malformed)",
            ),
            GraphErrorKind::Permission => (
                ErrorCode::MetaPermissionMissing,
                "the access token lacks a permission this needs (ads_read)",
            ),
            GraphErrorKind::Throttled => (
                ErrorCode::RateLimited,
                "Meta is rate limiting these calls; try again later",
            ),
            _ => (
                ErrorCode::MetaUnavailable,
                "Meta failed or did not answer; try again later",
            ),
        };
        Self {
            code,
            message: message.into(),
            cause: Some(Box::new(e)),
        }
    }
}
