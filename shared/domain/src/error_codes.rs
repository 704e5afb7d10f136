//! The error codes of the API (Conventions: "error codes (HTTP)") and the
//! prefixes of an account's `lastError`. One list, so the API, the README and
//! the stored errors cannot disagree.

/// A code a caller of the API can branch on, with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidArgument,
    Unauthenticated,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    Conflict,
    LimitExceeded,
    MetaTokenInvalid,
    MetaPermissionMissing,
    MetaLoginUnavailable,
    RateLimited,
    MetaUnavailable,
    SealingKeyUnavailable,
    ReportIncomplete,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 15] = [
        Self::InvalidArgument,
        Self::Unauthenticated,
        Self::Forbidden,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::Conflict,
        Self::LimitExceeded,
        Self::MetaTokenInvalid,
        Self::MetaPermissionMissing,
        Self::MetaLoginUnavailable,
        Self::RateLimited,
        Self::MetaUnavailable,
        Self::SealingKeyUnavailable,
        Self::ReportIncomplete,
        Self::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::Forbidden => "FORBIDDEN",
            Self::NotFound => "NOT_FOUND",
            Self::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Self::Conflict => "CONFLICT",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::MetaTokenInvalid => "META_TOKEN_INVALID",
            Self::MetaPermissionMissing => "META_PERMISSION_MISSING",
            Self::MetaLoginUnavailable => "META_LOGIN_UNAVAILABLE",
            Self::RateLimited => "RATE_LIMITED",
            Self::MetaUnavailable => "META_UNAVAILABLE",
            Self::SealingKeyUnavailable => "SEALING_KEY_UNAVAILABLE",
            Self::ReportIncomplete => "REPORT_INCOMPLETE",
            Self::Internal => "INTERNAL",
        }
    }

    pub fn http_status(self) -> u16 {
        match self {
            Self::InvalidArgument => 400,
            Self::Unauthenticated => 401,
            Self::Forbidden => 403,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::Conflict | Self::LimitExceeded => 409,
            Self::MetaTokenInvalid
            | Self::MetaPermissionMissing
            | Self::MetaLoginUnavailable
            | Self::ReportIncomplete => 422,
            Self::RateLimited => 429,
            Self::MetaUnavailable => 502,
            Self::SealingKeyUnavailable => 503,
            Self::Internal => 500,
        }
    }
}

/// The longest `lastError` stored on an account.
pub const MAX_LAST_ERROR: usize = 300;

/// `CODE: reason`, cut to [`MAX_LAST_ERROR`] characters on a char boundary.
pub fn last_error(code: &str, reason: &str) -> String {
    let text = format!("{code}: {reason}");
    match text.char_indices().nth(MAX_LAST_ERROR) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_errors_are_capped_at_300_characters() {
        let long = "é".repeat(400);
        let e = last_error("META_UNAVAILABLE", &long);
        assert_eq!(e.chars().count(), 300);
        assert!(e.starts_with("META_UNAVAILABLE: é"));
    }
}
