//! One function invocation as Lambda runs it: inside the runtime's span
//! (so a JSON log line carries its request id, as in Lambda), timed, and
//! followed by its metrics' flush, as each function's main does. What it
//! took (handler time) and wrote to its log (its lines and its metric
//! documents) is kept by function, and the metrics its documents name, for
//! the bench to price. Without a metrics recorder or a counting log
//! subscriber installed (anywhere but the bench) only the time is kept.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

/// Log bytes written in this process and not yet charged to an
/// invocation: a subscriber that counts what it writes (the bench's) adds
/// here, and each invocation's end takes it. Nothing else in the stack
/// counts lines, so outside the bench it stays 0.
static LOGGED: AtomicU64 = AtomicU64::new(0);

/// Every metric the invocations' documents named (CloudWatch bills each
/// one written in an hour): a few dozen at most, the dimensions being
/// bounded.
static METRICS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The distinct metrics written in this process so far, each as
/// `name{dimension=value,…}`.
pub fn metrics_seen() -> BTreeSet<String> {
    METRICS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Notes `n` bytes written to the log.
pub fn count_logged(n: usize) {
    LOGGED.fetch_add(n as u64, Ordering::Relaxed);
}

/// What one function's invocations took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Taken {
    pub invocations: u64,
    /// Handler time, wall milliseconds.
    pub ms: f64,
    /// Bytes its log lines and metric documents came to.
    pub log_bytes: u64,
}

/// Invocations, handler time and log bytes by the template's function id.
#[derive(Debug, Default)]
pub struct HandlerTime(Mutex<BTreeMap<String, Taken>>);

impl HandlerTime {
    /// One invocation of `function` that started at `started`: its time,
    /// and the log bytes written since the last one ended, with the
    /// metric documents it leaves (none unless a recorder is installed).
    fn add(&self, function: &str, request_id: &str, started: Instant) {
        let ms = started.elapsed().as_secs_f64() * 1_000.0;
        let mut documents = Vec::new();
        if let Err(error) = adtrail_store::telemetry::flush_into(request_id, &mut documents) {
            tracing::warn!(error = %error, "could not collect the metrics");
        }
        if !documents.is_empty() {
            let named = metrics_of(&String::from_utf8_lossy(&documents));
            METRICS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(named);
        }
        let logged = LOGGED.swap(0, Ordering::Relaxed) + documents.len() as u64;
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let e = m.entry(function.to_owned()).or_default();
        e.invocations += 1;
        e.ms += ms;
        e.log_bytes += logged;
    }
    /// Each function's invocations so far.
    pub fn snapshot(&self) -> BTreeMap<String, Taken> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn reset(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
        LOGGED.store(0, Ordering::Relaxed);
    }

    /// Runs `handler` as one invocation of `function`, ended at `timeout`
    /// as Lambda ends it: the handler stops where it is (its future is
    /// dropped, with whatever it had not written yet) and the invocation
    /// fails, billed for the whole timeout. Boxed: a handler's future is
    /// large (in a debug build, hundreds of kilobytes), and each move of it
    /// by value is a copy on the worker thread's stack.
    ///
    /// # Errors
    /// [`TimedOut`] when the handler was still running at `timeout`.
    pub(crate) async fn invoke<F: Future>(
        &self,
        function: &str,
        timeout: Duration,
        handler: Pin<Box<F>>,
    ) -> Result<F::Output, TimedOut> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let span = tracing::info_span!("Lambda runtime invoke", requestId = %request_id);
        let started = Instant::now();
        let out = tokio::time::timeout(timeout, handler.instrument(span)).await;
        self.add(function, &request_id, started);
        out.map_err(|_| {
            let cut = TimedOut(timeout.as_secs_f64());
            // What Lambda writes to the function's log.
            eprintln!("{function} {request_id}: {cut}");
            cut
        })
    }
}

/// Lambda ended an invocation at its timeout; its message, as Lambda logs
/// it.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("Task timed out after {0:.2} seconds")]
pub struct TimedOut(pub f64);

/// The context Lambda hands an invocation of a function whose timeout is
/// `timeout`: its deadline, in Unix milliseconds of the wall clock (the
/// handlers' deadlines are real time, whatever the runner's clock says).
pub fn context_until(timeout: Duration) -> lambda_runtime::Context {
    use adtrail_domain::time::{Clock, SystemClock};
    let mut ctx = lambda_runtime::Context::default();
    ctx.deadline = (SystemClock.now_ms().max(0) as u64).saturating_add(timeout.as_millis() as u64);
    ctx
}

/// The metrics Embedded Metric Format documents (one a line) name.
fn metrics_of(documents: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for doc in documents
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        for directive in doc["_aws"]["CloudWatchMetrics"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let sets = directive["Dimensions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            // A directive with no dimension set still makes one metric.
            let sets = if sets.is_empty() {
                vec![Value::Array(vec![])]
            } else {
                sets
            };
            for set in &sets {
                let dims: Vec<String> = set
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|k| format!("{k}={}", doc[k].as_str().unwrap_or_default()))
                    .collect();
                for metric in directive["Metrics"].as_array().into_iter().flatten() {
                    let name = metric["Name"].as_str().unwrap_or_default();
                    seen.insert(format!("{name}{{{}}}", dims.join(",")));
                }
            }
        }
    }
    seen
}

/// A log writer that counts what it is given and keeps none of it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingSink;

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        count_logged(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_invocation_takes_the_bytes_logged_before_its_end() {
        let time = HandlerTime::default();
        time.reset();
        let a_second = Duration::from_secs(1);
        time.invoke(
            "ApiFunction",
            a_second,
            Box::pin(async { count_logged(120) }),
        )
        .await
        .expect("in time");
        time.invoke("ApiFunction", a_second, Box::pin(async {}))
            .await
            .expect("in time");
        let taken = time.snapshot()["ApiFunction"];
        assert_eq!((taken.invocations, taken.log_bytes), (2, 120));
        time.reset();
        assert!(time.snapshot().is_empty());
    }

    #[tokio::test]
    async fn an_invocation_past_its_timeout_is_ended_there_and_billed_for_it() {
        let time = HandlerTime::default();
        let wrote = std::sync::Arc::new(AtomicU64::new(0));
        let w = wrote.clone();
        let started = Instant::now();
        let out = time
            .invoke(
                "SweeperFunction",
                Duration::from_millis(200),
                Box::pin(async move {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    w.store(1, Ordering::Relaxed);
                }),
            )
            .await;
        assert_eq!(out, Err(TimedOut(0.2)));
        assert_eq!(
            TimedOut(3.0).to_string(),
            "Task timed out after 3.00 seconds"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        // What the handler would have done after its deadline never happens.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(wrote.load(Ordering::Relaxed), 0);
        let taken = time.snapshot()["SweeperFunction"];
        assert_eq!(taken.invocations, 1);
        assert!(taken.ms >= 200.0);
    }

    #[test]
    fn an_invocations_deadline_is_its_timeout_from_now() {
        use adtrail_domain::time::{Clock, SystemClock};
        let now = SystemClock.now_ms() as u64;
        let ctx = context_until(Duration::from_secs(30));
        assert!((now + 30_000..now + 31_000).contains(&ctx.deadline));
    }

    #[test]
    fn a_metric_is_a_name_with_its_dimensions_values() {
        let docs = concat!(
            r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[[]],"Metrics":[{"Name":"SyncRuns"},{"Name":"MetaRequests"}]}]},"SyncRuns":1,"MetaRequests":3}"#,
            "\n",
            r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Outcome"]],"Metrics":[{"Name":"SyncRuns"}]}]},"Outcome":"succeeded","SyncRuns":1}"#,
            "\n",
            r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Outcome"]],"Metrics":[{"Name":"SyncRuns"}]}]},"Outcome":"succeeded","SyncRuns":2}"#,
            "\n",
            r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["Outcome"]],"Metrics":[{"Name":"SyncRuns"}]}]},"Outcome":"failed","SyncRuns":1}"#,
            "\nnot json\n",
        );
        assert_eq!(
            metrics_of(docs).into_iter().collect::<Vec<_>>(),
            [
                "MetaRequests{}",
                "SyncRuns{Outcome=failed}",
                "SyncRuns{Outcome=succeeded}",
                "SyncRuns{}"
            ]
        );
    }
}
