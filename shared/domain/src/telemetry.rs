//! The names of the CloudWatch metrics the functions write (in Embedded
//! Metric Format, under the stack's namespace) and their units. The
//! template's alarms and dashboard name the same metrics; a test of the
//! real binaries checks the two agree.
//!
//! Dimensions are few and bounded (an outcome, an error class, a platform,
//! a failure code): site and account ids are never dimensions, where each
//! would be a metric billed on its own, only properties of the document.

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
