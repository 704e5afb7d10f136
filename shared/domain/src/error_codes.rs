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
    PlatformCredentialsRefused,
    PlatformUnavailable,
    SealingKeyUnavailable,
    StoreUnavailable,
    ReportIncomplete,
    /// The stack's `LeadAds` parameter is off.
    LeadAdsOff,
    Internal,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 19] = [
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
        Self::PlatformCredentialsRefused,
        Self::PlatformUnavailable,
        Self::SealingKeyUnavailable,
        Self::StoreUnavailable,
        Self::ReportIncomplete,
        Self::LeadAdsOff,
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
            Self::PlatformCredentialsRefused => "PLATFORM_CREDENTIALS_REFUSED",
            Self::PlatformUnavailable => "PLATFORM_UNAVAILABLE",
            Self::SealingKeyUnavailable => "SEALING_KEY_UNAVAILABLE",
            Self::StoreUnavailable => "STORE_UNAVAILABLE",
            Self::LeadAdsOff => "LEAD_ADS_OFF",
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
            | Self::PlatformCredentialsRefused
            | Self::ReportIncomplete => 422,
            Self::RateLimited => 429,
            Self::MetaUnavailable | Self::PlatformUnavailable => 502,
            Self::SealingKeyUnavailable | Self::StoreUnavailable | Self::LeadAdsOff => 503,
            Self::Internal => 500,
        }
    }
}

/// The codes a stored `lastError` starts with: an ad account's (Conventions:
/// "an account's `lastError`"), a conversion's, a pixel's and a login's.
/// One list, so a stored error never spells a code another way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastErrorCode {
    MetaTokenInvalid,
    RateLimited,
    MetaUnavailable,
    MetaPermissionMissing,
    MetaTruncated,
    RunTimeout,
    SealingKeyUnavailable,
    AdAccountNotGranted,
    PixelNotGranted,
    TokenExchangeFailed,
    MetaRejected,
    EventTooOld,
    PixelUnavailable,
    DestinationUnavailable,
    PlatformRejected,
    PlatformTokenInvalid,
    PlatformPermissionMissing,
    PlatformUnavailable,
    Unexpected,
}

impl LastErrorCode {
    pub const ALL: [LastErrorCode; 19] = [
        Self::MetaTokenInvalid,
        Self::RateLimited,
        Self::MetaUnavailable,
        Self::MetaPermissionMissing,
        Self::MetaTruncated,
        Self::RunTimeout,
        Self::SealingKeyUnavailable,
        Self::AdAccountNotGranted,
        Self::PixelNotGranted,
        Self::TokenExchangeFailed,
        Self::MetaRejected,
        Self::EventTooOld,
        Self::PixelUnavailable,
        Self::DestinationUnavailable,
        Self::PlatformRejected,
        Self::PlatformTokenInvalid,
        Self::PlatformPermissionMissing,
        Self::PlatformUnavailable,
        Self::Unexpected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::MetaTokenInvalid => "META_TOKEN_INVALID",
            Self::RateLimited => "RATE_LIMITED",
            Self::MetaUnavailable => "META_UNAVAILABLE",
            Self::MetaPermissionMissing => "META_PERMISSION_MISSING",
            Self::MetaTruncated => "META_TRUNCATED",
            Self::RunTimeout => "RUN_TIMEOUT",
            Self::SealingKeyUnavailable => "SEALING_KEY_UNAVAILABLE",
            Self::AdAccountNotGranted => "AD_ACCOUNT_NOT_GRANTED",
            Self::PixelNotGranted => "PIXEL_NOT_GRANTED",
            Self::TokenExchangeFailed => "TOKEN_EXCHANGE_FAILED",
            Self::MetaRejected => "META_REJECTED",
            Self::EventTooOld => "EVENT_TOO_OLD",
            Self::PixelUnavailable => "PIXEL_UNAVAILABLE",
            Self::DestinationUnavailable => "DESTINATION_UNAVAILABLE",
            Self::PlatformRejected => "PLATFORM_REJECTED",
            Self::PlatformTokenInvalid => "PLATFORM_TOKEN_INVALID",
            Self::PlatformPermissionMissing => "PLATFORM_PERMISSION_MISSING",
            Self::PlatformUnavailable => "PLATFORM_UNAVAILABLE",
            Self::Unexpected => "UNEXPECTED",
        }
    }

    /// The code a stored `lastError` starts with; `Unexpected` for text
    /// that starts with none (a metric's dimension stays in this list).
    pub fn of(last_error: &str) -> LastErrorCode {
        let code = last_error.split(':').next().unwrap_or("");
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == code)
            .unwrap_or(Self::Unexpected)
    }
}

/// The longest `lastError` stored on an account.
pub const MAX_LAST_ERROR: usize = 300;

/// `CODE: reason`, cut to [`MAX_LAST_ERROR`] characters on a char boundary.
pub fn last_error(code: LastErrorCode, reason: &str) -> String {
    let text = format!("{}: {reason}", code.as_str());
    match text.char_indices().nth(MAX_LAST_ERROR) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_error_gives_back_its_code() {
        for code in LastErrorCode::ALL {
            assert_eq!(LastErrorCode::of(&last_error(code, "why: and more")), code);
        }
        assert_eq!(
            LastErrorCode::of("META_REJECTED_SOON: x"),
            LastErrorCode::Unexpected
        );
        assert_eq!(LastErrorCode::of(""), LastErrorCode::Unexpected);
    }

    #[test]
    fn last_errors_are_capped_at_300_characters() {
        let long = "é".repeat(400);
        let e = last_error(LastErrorCode::MetaUnavailable, &long);
        assert_eq!(e.chars().count(), 300);
        assert!(e.starts_with("META_UNAVAILABLE: é"));
    }
}
