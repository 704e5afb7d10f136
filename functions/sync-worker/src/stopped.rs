//! How a run that stopped reads as an outcome: a Graph failure, the
//! deadline, a failure before reading, and how far a stopped backfill
//! block got (the days its saved parts cover without a gap).

use adtrail_domain::dates::{LocalDate, shift};
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::outcome::{FailureKind, RunOutcome};
use adtrail_domain::plan::DateRange;
use adtrail_meta::GraphError;

use crate::run::Stop;

/// The last day of `range` that the parts read cover without a gap from
/// its first, if they cover any.
pub(crate) fn read_through(range: DateRange, parts: &[crate::read::PartRead]) -> Option<LocalDate> {
    let mut ranges: Vec<DateRange> = parts.iter().map(|p| p.range).collect();
    ranges.sort_by_key(|r| r.since);
    let mut through: Option<LocalDate> = None;
    for r in ranges {
        let next = through.map_or(range.since, |d| shift(d, 1));
        if r.since != next {
            break;
        }
        through = Some(r.until);
    }
    through.filter(|d| *d < range.until)
}

/// A run's outcome when something stopped it (not AWS, not a lost lease).
pub(crate) fn stopped(stop: Stop) -> RunOutcome {
    match stop {
        Stop::OutOfTime => RunOutcome::Failed {
            kind: FailureKind::OutOfTime,
            reason: "the run stopped before its Lambda deadline; what it read is saved and the next run reads the rest"
                .into(),
            regain_ms: None,
        },
        Stop::Graph(e) => graph_failure(&e),
        Stop::LostLease | Stop::Store(_) => RunOutcome::Failed {
            kind: FailureKind::Unavailable,
            reason: "link lost".into(),
            regain_ms: None,
        },
    }
}

/// A Graph failure as a run outcome.
fn graph_failure(e: &GraphError) -> RunOutcome {
    let kind = match e.kind {
        GraphErrorKind::TokenInvalid => FailureKind::Token,
        GraphErrorKind::Throttled => FailureKind::Throttled,
        GraphErrorKind::Permission => FailureKind::Permission,
        GraphErrorKind::TooMuchData | GraphErrorKind::Transient | GraphErrorKind::Other => {
            FailureKind::Unavailable
        }
    };
    let reason = match e.code {
        Some(code) => format!("Meta error {code}: {}", e.message),
        None if e.status > 0 => format!("Meta answered HTTP {}", e.status),
        None => e.message.clone(),
    };
    RunOutcome::Failed {
        kind,
        reason,
        regain_ms: e.regain_ms,
    }
}

/// A run that failed before reading Meta.
pub(crate) fn failed(kind: FailureKind, reason: &str) -> RunOutcome {
    RunOutcome::Failed {
        kind,
        reason: reason.into(),
        regain_ms: None,
    }
}
