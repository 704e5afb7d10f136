//! How adtrail reads Meta's answers: which errors mean a dead token, a
//! missing permission, a throttle, too much data, or a passing failure; and
//! how busy Meta's usage headers say we are. The one place that knows
//! Meta's codes; the Graph client and the sync call into it.

use serde_json::Value;

use crate::time::{HOUR_MS, MINUTE_MS};

/// What an error from the Graph API means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphErrorKind {
    /// The token is dead (expired, revoked): 190, 102.
    TokenInvalid,
    /// The token lacks a permission or the object is not shared: 10, 200–299, 3.
    Permission,
    /// A rate limit: 4, 17, 32, 613, 80000–80014.
    Throttled,
    /// "Please reduce the amount of data": shrink the range (100/1487534 and
    /// the insights timeouts 100/1504018, 2/1504038).
    TooMuchData,
    /// Worth retrying later: 1, 2, `is_transient`, HTTP 5xx, a timeout.
    Transient,
    /// Anything else: a bad request, an unknown code.
    Other,
}

impl GraphErrorKind {
    /// The class's name in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TokenInvalid => "token_invalid",
            Self::Permission => "permission",
            Self::Throttled => "throttled",
            Self::TooMuchData => "too_much_data",
            Self::Transient => "transient",
            Self::Other => "other",
        }
    }
}

/// Classifies an error answer of the Graph API.
pub fn classify(
    http_status: u16,
    code: Option<i64>,
    subcode: Option<i64>,
    is_transient: bool,
) -> GraphErrorKind {
    use GraphErrorKind::*;
    match (code, subcode) {
        (Some(190 | 102), _) => TokenInvalid,
        (Some(100), Some(1_487_534 | 1_504_018)) | (Some(2), Some(1_504_038)) => TooMuchData,
        (Some(4 | 17 | 32 | 613 | 80_000..=80_014), _) => Throttled,
        (Some(10 | 3 | 200..=299), _) => Permission,
        (Some(1 | 2), _) => Transient,
        _ if is_transient || http_status >= 500 => Transient,
        _ => Other,
    }
}

/// Under this much time left, a login's token is traded for a long-lived
/// one and its connection says `expiringSoon` (the screen asks for a new
/// login in time).
pub const EXPIRING_SOON_MS: i64 = 7 * crate::time::DAY_MS;

/// What a refused step of Facebook Login means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefusal {
    /// The code (used, expired, for another redirect) or the token it gave:
    /// the user logs in again.
    Code,
    /// Meta refused the app's id (101) or secret (code 1 on a 4xx): the
    /// login is unavailable until the operator fixes the app's secret.
    App,
    /// Anything else, read like any Graph error.
    Meta(GraphErrorKind),
}

/// Classifies an error answer of `/oauth/access_token` or `/debug_token`.
/// Code 1 is "unknown error" elsewhere (transient on a 5xx); on the token
/// endpoint with a 4xx it is Meta's "Error validating client secret".
pub fn classify_login(http_status: u16, code: Option<i64>, subcode: Option<i64>) -> LoginRefusal {
    match code {
        Some(101) => LoginRefusal::App,
        Some(1) if (400..500).contains(&http_status) => LoginRefusal::App,
        Some(100 | 190) => LoginRefusal::Code,
        _ => LoginRefusal::Meta(classify(http_status, code, subcode, false)),
    }
}

/// How close Meta says we are to its limits: the highest percentage of any
/// usage header, and how long Meta says until access is regained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub pct: u32,
    pub regain_ms: Option<i64>,
}

impl Usage {
    /// The larger of two readings.
    pub fn merge(self, other: Usage) -> Usage {
        Usage {
            pct: self.pct.max(other.pct),
            regain_ms: match (self.regain_ms, other.regain_ms) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

/// The usage headers Meta sends, by name.
pub const USAGE_HEADERS: [&str; 4] = [
    "x-app-usage",
    "x-ad-account-usage",
    "x-business-use-case-usage",
    "x-fb-ads-insights-throttle",
];

/// The largest header value we parse: Meta's are a few hundred bytes.
const MAX_USAGE_HEADER: usize = 8 * 1024;
/// A regain time beyond a day is not believed.
const MAX_REGAIN_MS: i64 = 24 * HOUR_MS;

/// Reads one usage header's JSON value; malformed or oversized text reads as
/// no usage at all.
pub fn parse_usage_header(value: &str) -> Usage {
    if value.len() > MAX_USAGE_HEADER {
        return Usage::default();
    }
    let Ok(json) = serde_json::from_str::<Value>(value) else {
        return Usage::default();
    };
    let mut usage = Usage::default();
    walk(&json, &mut usage, 0);
    usage
}

fn walk(value: &Value, usage: &mut Usage, depth: u32) {
    if depth > 4 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let n = v.as_f64().filter(|n| n.is_finite() && *n >= 0.0);
                match (key.as_str(), n) {
                    (
                        "call_count" | "total_time" | "total_cputime" | "acc_id_util_pct"
                        | "app_id_util_pct",
                        Some(n),
                    ) => {
                        usage.pct = usage.pct.max(n.min(1_000.0) as u32);
                    }
                    ("estimated_time_to_regain_access", Some(n)) if n > 0.0 => {
                        // Bounded before the multiplication: Meta's number is untrusted.
                        let ms = (n as i64).saturating_mul(MINUTE_MS).min(MAX_REGAIN_MS);
                        usage.regain_ms = Some(usage.regain_ms.unwrap_or(0).max(ms));
                    }
                    _ => walk(v, usage, depth + 1),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .take(32)
            .for_each(|v| walk(v, usage, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use GraphErrorKind::*;

    #[test]
    fn meta_codes_are_classified() {
        let cases = [
            (400, Some(190), Some(463), false, TokenInvalid),
            (400, Some(190), None, false, TokenInvalid),
            (400, Some(102), None, false, TokenInvalid),
            (400, Some(10), None, false, Permission),
            (403, Some(200), None, false, Permission),
            (400, Some(294), None, false, Permission),
            (400, Some(3), None, false, Permission),
            (400, Some(4), None, true, Throttled),
            (400, Some(17), Some(2_446_079), false, Throttled),
            (400, Some(32), None, false, Throttled),
            (400, Some(613), None, false, Throttled),
            (400, Some(80_000), None, false, Throttled),
            (400, Some(80_014), None, false, Throttled),
            (500, Some(100), Some(1_487_534), false, TooMuchData),
            (500, Some(100), Some(1_504_018), false, TooMuchData),
            (500, Some(2), Some(1_504_038), true, TooMuchData),
            (500, Some(1), None, false, Transient),
            (500, Some(2), None, true, Transient),
            (400, Some(9_999), None, true, Transient),
            (503, None, None, false, Transient),
            (400, Some(100), None, false, Other),
            (404, None, None, false, Other),
        ];
        for (status, code, sub, transient, want) in cases {
            assert_eq!(
                classify(status, code, sub, transient),
                want,
                "{status} {code:?} {sub:?}"
            );
        }
    }

    #[test]
    fn usage_headers_give_the_highest_share_and_the_regain_time() {
        assert_eq!(
            parse_usage_header(r#"{"call_count":28,"total_time":80,"total_cputime":25}"#).pct,
            80
        );
        assert_eq!(
            parse_usage_header(r#"{"acc_id_util_pct":9.67,"reset_time_duration":0}"#).pct,
            9
        );
        let buc = parse_usage_header(
            r#"{"123":[{"type":"ads_insights","call_count":96,"total_cputime":10,"total_time":5,"estimated_time_to_regain_access":90}]}"#,
        );
        assert_eq!(
            buc,
            Usage {
                pct: 96,
                regain_ms: Some(90 * MINUTE_MS)
            }
        );
        assert_eq!(parse_usage_header("not json"), Usage::default());
        assert_eq!(parse_usage_header(&"x".repeat(9_000)), Usage::default());
        let capped = parse_usage_header(r#"{"x":[{"estimated_time_to_regain_access":100000}]}"#);
        assert_eq!(capped.regain_ms, Some(24 * HOUR_MS));
        // A number past i64 must not overflow (it panicked in debug builds).
        let huge = parse_usage_header(r#"{"x":[{"estimated_time_to_regain_access":1e30}]}"#);
        assert_eq!(huge.regain_ms, Some(24 * HOUR_MS));
    }

    #[test]
    fn login_refusals_tell_the_code_from_the_app() {
        use LoginRefusal::*;
        for (status, code, sub, want) in [
            (400, Some(100), Some(36_009), Code),
            (400, Some(100), Some(36_007), Code),
            (400, Some(190), None, Code),
            (400, Some(101), None, App),
            (400, Some(1), None, App),
            (500, Some(1), None, Meta(GraphErrorKind::Transient)),
            (400, Some(4), None, Meta(GraphErrorKind::Throttled)),
        ] {
            assert_eq!(classify_login(status, code, sub), want, "{status} {code:?}");
        }
    }
}
