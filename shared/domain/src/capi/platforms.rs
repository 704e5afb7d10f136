//! The other platforms' answers as verdicts: how each says a request
//! failed (TikTok's `code` in a 200, Pinterest's and Snap's HTTP statuses,
//! Google's gRPC status), which refusals a retry can mend, and what a
//! request of many does when one event is invalid (split it, as for Meta;
//! Pinterest answers per event instead). Facts from
//! `../shared/research/platforms.md` §0.4, §3.7, §4.4, §5.5, §2.2.

use super::{Judged, MAX_EVENT_AGE_MS, SendFailure, Verdict};
use crate::error_codes::{LastErrorCode, last_error};
use crate::identifiers::Platform;

/// Why a platform refused a whole request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The request (one of its events, for the platforms that fail it
    /// whole) is invalid: no retry mends it.
    Invalid,
    /// The credentials are refused: the destination stops.
    TokenInvalid,
    /// The credentials cannot reach the account.
    Permission,
    /// Too many requests: a retry after `wait_ms` (0: the schedule's).
    Throttled { wait_ms: i64 },
    /// The platform failed: a retry may go through.
    Transient,
}

/// TikTok's `code` (in an HTTP 200): `None` when the events were taken (0,
/// and 20001, which its peers count as taken).
pub fn tiktok_refusal(code: i64) -> Option<Refusal> {
    match code {
        0 | 20001 => None,
        40100 => Some(Refusal::Throttled { wait_ms: 0 }),
        // 40104/40105: the access token is missing, expired or revoked.
        40104 | 40105 => Some(Refusal::TokenInvalid),
        40001 => Some(Refusal::Permission),
        40002 => Some(Refusal::Invalid),
        c if (50000..60000).contains(&c) => Some(Refusal::Transient),
        _ => Some(Refusal::Invalid),
    }
}

/// Pinterest's, Snap's and Google's HTTP status on a failed request.
/// Pinterest's 422 is not here: it answers per event.
pub fn http_refusal(status: u16, retry_after_ms: Option<i64>) -> Refusal {
    match status {
        401 => Refusal::TokenInvalid,
        403 => Refusal::Permission,
        408 | 500..=599 => Refusal::Transient,
        429 => Refusal::Throttled {
            wait_ms: retry_after_ms.unwrap_or(0),
        },
        _ => Refusal::Invalid,
    }
}

/// The `lastError` of a platform's refusal: its code, the platform, and
/// the platform's own words, bounded and with anything that looks like a
/// hash or an address taken out (a platform may echo what it was sent).
fn platform_error(code: LastErrorCode, platform: Platform, message: &str) -> String {
    last_error(code, &format!("{}: {}", platform.as_str(), scrub(message)))
}

/// A platform's message made safe to keep: at most 200 characters, no
/// hidden characters, runs of 16 or more hex digits (hashes, ids) and
/// dotted numbers (IP addresses) replaced.
pub fn scrub(message: &str) -> String {
    let mut out = String::new();
    for word in message.split_whitespace() {
        let hexy = word.chars().filter(char::is_ascii_hexdigit).count() >= 16;
        let dotted = word.chars().filter(|c| *c == '.').count() >= 3
            && word.chars().any(|c| c.is_ascii_digit());
        if !out.is_empty() {
            out.push(' ');
        }
        if hexy || dotted {
            out.push_str("<redacted>");
        } else {
            out.extend(word.chars().filter(|c| !crate::ids::is_hidden(*c)));
        }
        if out.chars().count() > 200 {
            return out.chars().take(200).collect();
        }
    }
    out
}

/// What a refusal of a request of `events` events makes of them. An
/// invalid request of many is split until the invalid event stands alone
/// (Meta, TikTok, Snap and Google fail a request whole).
pub fn judge_refusal(platform: Platform, refusal: Refusal, message: &str, events: usize) -> Judged {
    let attempt = |f: SendFailure, code: LastErrorCode| {
        Judged::All(Verdict::Attempt(f, platform_error(code, platform, message)))
    };
    match refusal {
        Refusal::Invalid if events > 1 => Judged::Split,
        Refusal::Invalid => Judged::All(Verdict::Failed(platform_error(
            LastErrorCode::PlatformRejected,
            platform,
            message,
        ))),
        Refusal::TokenInvalid => attempt(
            SendFailure::TokenInvalid,
            LastErrorCode::PlatformTokenInvalid,
        ),
        Refusal::Permission => attempt(
            SendFailure::Permission,
            LastErrorCode::PlatformPermissionMissing,
        ),
        Refusal::Throttled { wait_ms } => Judged::All(Verdict::Throttled {
            wait_ms: wait_ms.clamp(0, MAX_EVENT_AGE_MS),
            error: platform_error(LastErrorCode::PlatformUnavailable, platform, message),
        }),
        Refusal::Transient => attempt(SendFailure::Unavailable, LastErrorCode::PlatformUnavailable),
    }
}

/// A request that left and got no answer: the platform may hold its
/// events; they go again with the same ids, which it deduplicates.
pub fn judge_platform_unanswered(platform: Platform, message: &str) -> Verdict {
    Verdict::Attempt(
        SendFailure::Unanswered,
        platform_error(LastErrorCode::PlatformUnavailable, platform, message),
    )
}

/// One event of a per-event answer (Pinterest's): processed, or failed
/// for good with the platform's reason (never resent: the others of its
/// request were processed).
pub fn judge_event(platform: Platform, failure: Option<&str>) -> Verdict {
    match failure {
        None => Verdict::Sent,
        Some(why) => Verdict::Failed(platform_error(
            LastErrorCode::PlatformRejected,
            platform,
            why,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiktok_codes_sort_into_refusals() {
        assert_eq!(tiktok_refusal(0), None);
        assert_eq!(tiktok_refusal(20001), None);
        assert_eq!(
            tiktok_refusal(40100),
            Some(Refusal::Throttled { wait_ms: 0 })
        );
        assert_eq!(tiktok_refusal(40105), Some(Refusal::TokenInvalid));
        assert_eq!(tiktok_refusal(40001), Some(Refusal::Permission));
        assert_eq!(tiktok_refusal(40002), Some(Refusal::Invalid));
        assert_eq!(tiktok_refusal(51000), Some(Refusal::Transient));
    }

    #[test]
    fn http_statuses_sort_into_refusals() {
        assert_eq!(http_refusal(401, None), Refusal::TokenInvalid);
        assert_eq!(http_refusal(403, None), Refusal::Permission);
        assert_eq!(
            http_refusal(429, Some(5_000)),
            Refusal::Throttled { wait_ms: 5_000 }
        );
        assert_eq!(http_refusal(503, None), Refusal::Transient);
        assert_eq!(http_refusal(400, None), Refusal::Invalid);
    }

    #[test]
    fn an_invalid_request_of_many_is_split_and_one_alone_fails_for_good() {
        let j = judge_refusal(Platform::TikTok, Refusal::Invalid, "bad", 4);
        assert_eq!(j, Judged::Split);
        let Judged::All(Verdict::Failed(e)) =
            judge_refusal(Platform::TikTok, Refusal::Invalid, "bad", 1)
        else {
            panic!("a lone invalid event fails");
        };
        assert_eq!(e, "PLATFORM_REJECTED: tiktok: bad");
        let Judged::All(Verdict::Attempt(f, e)) =
            judge_refusal(Platform::Snap, Refusal::TokenInvalid, "Unauthorized", 9)
        else {
            panic!("a refused token is an attempt");
        };
        assert_eq!(f, SendFailure::TokenInvalid);
        assert!(e.starts_with("PLATFORM_TOKEN_INVALID: snap"));
    }

    #[test]
    fn what_a_platform_echoes_is_scrubbed() {
        let hash = "a".repeat(64);
        let text = format!("Invalid em {hash} from 203.0.113.9\u{200B} please");
        assert_eq!(scrub(&text), "Invalid em <redacted> from <redacted> please");
        assert_eq!(scrub(&"x".repeat(500)).chars().count(), 200);
    }
}
