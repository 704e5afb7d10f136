//! The names of the CloudWatch metrics the functions write (in Embedded
//! Metric Format, under the stack's namespace) and their units. The
//! template's alarms and dashboard name the same metrics; a test of the
//! real binaries checks the two agree.
//!
//! Dimensions are few and bounded (an outcome, an error class, a platform,
//! a failure code): site and account ids are never dimensions, where each
//! would be a metric billed on its own, only properties of the document.
//! The histograms each keep a count of the values they took since the
//! recorder's last flush (see [`HISTOGRAM_VALUES`]).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The unit a metric is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    Percent,
}

/// Sync runs ended, by `Outcome` (see [`crate::outcome::RunOutcome::class`]).
pub const SYNC_RUNS: &str = "SyncRuns";
/// Spend rows a sync run wrote.
pub const SPEND_ROWS_WRITTEN: &str = "SpendRowsWritten";
/// Requests to the Graph API.
pub const META_REQUESTS: &str = "MetaRequests";
/// How long a Graph API request took.
pub const META_LATENCY: &str = "MetaLatency";
/// Graph API errors, by `Class` (see [`crate::graph_error::GraphErrorKind::as_str`]).
pub const META_ERRORS: &str = "MetaErrors";
/// The highest rate-limit usage Meta reported on an answer.
pub const META_USAGE: &str = "MetaUsagePercent";
/// Conversions a platform took.
pub const CONVERSIONS_SENT: &str = "ConversionsSent";
/// Conversions failed for good: in total, and by `Reason` (the code of
/// their `lastError`).
pub const CONVERSIONS_FAILED: &str = "ConversionsFailed";
/// Conversions given another attempt later.
pub const CONVERSIONS_RETRIED: &str = "ConversionsRetried";
/// Requests to a conversions API, by `Platform`.
pub const PLATFORM_REQUESTS: &str = "PlatformRequests";
/// Rows the sweeper deleted for unlinked accounts.
pub const ROWS_PURGED: &str = "RowsPurged";
/// Conversions the sweeper put back on the send queue.
pub const CONVERSIONS_RESENT: &str = "ConversionsResent";
/// Tokens the sweeper found expiring within the warning window.
pub const TOKENS_EXPIRING_SOON: &str = "TokensExpiringSoon";

/// Every metric with its unit.
pub const METRICS: [(&str, Unit); 13] = [
    (SYNC_RUNS, Unit::Count),
    (SPEND_ROWS_WRITTEN, Unit::Count),
    (META_REQUESTS, Unit::Count),
    (META_LATENCY, Unit::Milliseconds),
    (META_ERRORS, Unit::Count),
    (META_USAGE, Unit::Percent),
    (CONVERSIONS_SENT, Unit::Count),
    (CONVERSIONS_FAILED, Unit::Count),
    (CONVERSIONS_RETRIED, Unit::Count),
    (PLATFORM_REQUESTS, Unit::Count),
    (ROWS_PURGED, Unit::Count),
    (CONVERSIONS_RESENT, Unit::Count),
    (TOKENS_EXPIRING_SOON, Unit::Count),
];

/// Values of one histogram (`MetaLatency`, `MetaUsagePercent`) an
/// invocation's metric document holds at most: an Embedded Metric Format
/// document takes up to 100 values of a metric, and the recorder keeps no
/// more between two flushes (it refuses each one past that with a line at
/// ERROR). An invocation that makes more requests (a long backfill, a
/// sender batch for many pixels) keeps the first 100 latencies; the
/// `MetaRequests` counter still counts every request.
pub const HISTOGRAM_VALUES: usize = 100;

/// The histograms, each with the values it took since the last flush.
static HISTOGRAMS: [(&str, AtomicUsize); 2] = [
    (META_LATENCY, AtomicUsize::new(0)),
    (META_USAGE, AtomicUsize::new(0)),
];

/// Whether the histogram `name` may take one more value before the next
/// flush (and, when it may, that it took one).
pub fn histogram_slot(name: &str) -> bool {
    HISTOGRAMS
        .iter()
        .find(|(n, _)| *n == name)
        .is_some_and(|(_, taken)| {
            taken
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                    (t < HISTOGRAM_VALUES).then_some(t + 1)
                })
                .is_ok()
        })
}

/// The recorder wrote its values out: every histogram may take
/// [`HISTOGRAM_VALUES`] again.
pub fn histograms_flushed() {
    for (_, taken) in &HISTOGRAMS {
        taken.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_takes_a_hundred_values_a_flush() {
        histograms_flushed();
        let taken = (0..150).filter(|_| histogram_slot(META_USAGE)).count();
        assert_eq!(taken, HISTOGRAM_VALUES);
        assert!(!histogram_slot("NoSuchHistogram"));
        histograms_flushed();
        assert!(histogram_slot(META_USAGE));
    }
}
