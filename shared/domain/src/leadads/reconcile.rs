//! The 15-minute reconciliation of a linked Page: which leads to ask Meta
//! for (created since the last checkpoint, less an overlap for Meta's late
//! pings, never further back than Meta keeps leads), and when to try again
//! after Meta refused. A link's first reconciliation reads its backfill.

use crate::error_codes::{LastErrorCode, last_error};
use crate::graph_error::GraphErrorKind;
use crate::time::{DAY_MS, HOUR_MS, MINUTE_MS};

/// How often each linked Page's forms are read.
pub const RECONCILE_EVERY_MS: i64 = 15 * MINUTE_MS;
/// How far before the checkpoint a reconciliation reads again: a webhook
/// whose ping came late, a lead Meta listed late.
pub const RECONCILE_OVERLAP_MS: i64 = 15 * MINUTE_MS;
/// The most days a link's backfill (and any reconciliation) reads back.
pub const MAX_BACKFILL_DAYS: i64 = 90;

/// The creation time from which to ask Meta for a Page's leads.
pub fn reconcile_since(checkpoint: i64, now: i64) -> i64 {
    (checkpoint - RECONCILE_OVERLAP_MS).max(now - MAX_BACKFILL_DAYS * DAY_MS)
}

/// When to reconcile again after Meta refused: a throttle waits at least
/// an hour (longer if Meta says so), as the spend sync does; a refused
/// token or permission waits six hours (a reconnect resets it); anything
/// else, the next turn.
pub fn reconcile_retry_ms(kind: GraphErrorKind, regain_ms: Option<i64>) -> i64 {
    match kind {
        GraphErrorKind::Throttled => regain_ms.unwrap_or(0).max(HOUR_MS),
        GraphErrorKind::TokenInvalid | GraphErrorKind::Permission => 6 * HOUR_MS,
        _ => RECONCILE_EVERY_MS,
    }
}

/// How long a form lead whose read Meta throttled waits before the next
/// try: as long as a throttled reconciliation (at least an hour, longer if
/// Meta says so). `None`: any other failure comes back after the queue's
/// own visibility timeout.
pub fn lead_read_wait_ms(kind: GraphErrorKind, regain_ms: Option<i64>) -> Option<i64> {
    (kind == GraphErrorKind::Throttled).then(|| reconcile_retry_ms(kind, regain_ms))
}

/// A Page's `lastError` for a reconciliation Meta refused.
pub fn reconcile_error(kind: GraphErrorKind, message: &str) -> String {
    let code = match kind {
        GraphErrorKind::TokenInvalid => LastErrorCode::MetaTokenInvalid,
        GraphErrorKind::Permission => LastErrorCode::MetaPermissionMissing,
        GraphErrorKind::Throttled => LastErrorCode::RateLimited,
        _ => LastErrorCode::MetaUnavailable,
    };
    last_error(code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_from_the_checkpoint_less_the_overlap_within_90_days() {
        let now = 200 * DAY_MS;
        assert_eq!(
            reconcile_since(now - RECONCILE_EVERY_MS, now),
            now - RECONCILE_EVERY_MS - RECONCILE_OVERLAP_MS
        );
        assert_eq!(
            reconcile_since(0, now),
            now - 90 * DAY_MS,
            "a backfill's reach"
        );
    }

    #[test]
    fn a_throttled_lead_read_waits_as_a_throttled_reconciliation() {
        use GraphErrorKind::*;
        assert_eq!(lead_read_wait_ms(Throttled, None), Some(HOUR_MS));
        assert_eq!(
            lead_read_wait_ms(Throttled, Some(2 * HOUR_MS)),
            Some(2 * HOUR_MS)
        );
        for kind in [TokenInvalid, Permission, Transient, TooMuchData, Other] {
            assert_eq!(lead_read_wait_ms(kind, Some(2 * HOUR_MS)), None, "{kind:?}");
        }
    }

    #[test]
    fn refusals_wait_as_the_sync_does() {
        use GraphErrorKind::*;
        assert_eq!(reconcile_retry_ms(Throttled, None), HOUR_MS);
        assert_eq!(
            reconcile_retry_ms(Throttled, Some(3 * HOUR_MS)),
            3 * HOUR_MS
        );
        assert_eq!(reconcile_retry_ms(TokenInvalid, None), 6 * HOUR_MS);
        assert_eq!(reconcile_retry_ms(Permission, None), 6 * HOUR_MS);
        assert_eq!(reconcile_retry_ms(Transient, None), RECONCILE_EVERY_MS);
    }
}
