//! The metrics recorder every Lambda main installs: the `metrics` facade's
//! counters and histograms, written to stdout in CloudWatch's Embedded
//! Metric Format once per invocation, where CloudWatch Logs turns them into
//! metrics without a `PutMetricData` call (no permission, no request, no
//! latency on the invocation).
//!
//! The namespace comes from `METRICS_NAMESPACE` (the template sets
//! `adtrail/<stack>`). Names and units are [`adtrail_domain::telemetry`]'s.
//! The ids an invocation worked on (sites, ad accounts) go in each document
//! as properties, lists of at most [`MOST_IDS`], never as dimensions.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use adtrail_domain::telemetry::{METRICS, Unit};
use metrics_cloudwatch_embedded::{Builder, Collector};

/// The namespace outside a stack.
pub const DEFAULT_NAMESPACE: &str = "adtrail";
/// The most ids of one kind a document lists.
pub const MOST_IDS: usize = 100;

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();
static IDS: Mutex<BTreeMap<&'static str, BTreeSet<String>>> = Mutex::new(BTreeMap::new());

/// Installs the recorder. Without it (unit tests, a second init) the
/// facade's calls record nothing.
pub fn init() {
    let namespace = std::env::var("METRICS_NAMESPACE")
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
    match Builder::new().cloudwatch_namespace(namespace).init() {
        Ok(collector) => {
            if let Ok(function) = std::env::var("AWS_LAMBDA_FUNCTION_NAME") {
                collector.set_property("function", function);
            }
            for (name, unit) in METRICS {
                let unit = match unit {
                    Unit::Count => metrics::Unit::Count,
                    Unit::Milliseconds => metrics::Unit::Milliseconds,
                    Unit::Percent => metrics::Unit::Percent,
                };
                // The collector keeps units by name, whatever the kind.
                metrics::describe_counter!(name, unit, "");
            }
            let _ = COLLECTOR.set(collector);
        }
        Err(error) => tracing::warn!(error = %error, "metrics are off"),
    }
}

/// Notes that this invocation worked on `id` (of kind `property`, e.g.
/// `siteIds`): the next flush lists it.
pub fn note(property: &'static str, id: &str) {
    if COLLECTOR.get().is_none() {
        return;
    }
    let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
    let set = ids.entry(property).or_default();
    if set.len() < MOST_IDS {
        set.insert(id.to_owned());
    }
}

/// Writes what was recorded since the last flush, one line per dimension
/// set, in one write so no log line lands inside a document.
pub fn flush(request_id: &str) {
    let written = std::io::stdout().lock();
    if let Err(error) = flush_into(request_id, written) {
        tracing::warn!(error = %error, "could not write the metrics");
    }
}

/// [`flush`] into any writer (the bench counts the metrics a month would
/// bill).
///
/// # Errors
/// The writer's.
pub fn flush_into(request_id: &str, mut out: impl Write) -> std::io::Result<()> {
    let Some(collector) = COLLECTOR.get() else {
        return Ok(());
    };
    let ids = std::mem::take(&mut *IDS.lock().unwrap_or_else(|e| e.into_inner()));
    collector.set_property("requestId", request_id);
    for (property, set) in &ids {
        collector.set_property(*property, set.iter().cloned().collect::<Vec<_>>());
    }
    let mut documents = Vec::new();
    let written = collector.flush(&mut documents);
    adtrail_domain::telemetry::histograms_flushed();
    for property in ids.keys() {
        collector.remove_property(*property);
    }
    written.and_then(|()| out.write_all(&documents))
}

/// Runs one invocation's handler, then flushes its metrics.
pub async fn flushing<F: Future>(request_id: String, handler: F) -> F::Output {
    let out = handler.await;
    flush(&request_id);
    out
}

#[cfg(test)]
mod tests {
    use adtrail_domain::telemetry::{HISTOGRAM_VALUES, META_LATENCY, histogram_slot};
    use serde_json::Value;

    /// An invocation that makes more requests than a document holds
    /// latencies keeps the first hundred, and the next one has room again:
    /// the recorder never refuses a value (with a line at ERROR for each).
    #[test]
    fn a_flush_holds_at_most_a_hundred_latencies_and_makes_room_for_more() {
        super::init();
        let record = |n: usize| {
            for i in 0..n {
                if histogram_slot(META_LATENCY) {
                    metrics::histogram!(META_LATENCY).record(i as f64);
                }
            }
        };
        let latencies = || {
            let mut out = Vec::new();
            super::flush_into("req", &mut out).unwrap();
            String::from_utf8(out)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|d| d[META_LATENCY].as_array().map(Vec::len))
                .sum::<usize>()
        };
        let _ = latencies();
        // What the recorder says while the values are recorded.
        let said = crate::logging::Lines::default();
        let sink = said.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || sink.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || record(250));
        assert_eq!(latencies(), HISTOGRAM_VALUES);
        let said = said.text();
        assert!(!said.contains("Failed to record"), "{said}");
        record(3);
        assert_eq!(latencies(), 3);
    }
}
