//! The sync worker: one SQS message is one run of one ad account, leased by
//! the dispatcher under a `runId`. The run reads Meta (insights, and on daily
//! runs the ads), writes spend rows with their site-day sums and the catalog
//! under the run's lease, copies new thumbnails to S3, and records how it
//! ended and when the account syncs next.
//!
//! Messages are parsed one by one, so a malformed body fails only itself
//! (and, after the queue's receive limit, reaches the dead-letter queue). A
//! run's Meta failures are outcomes stored on the account, not message
//! failures: only an AWS failure returns the message to the queue.

mod catalog;
mod read;
mod run;
mod stopped;

use std::time::{Duration, Instant};

use adtrail_domain::time::SharedClock;
use adtrail_meta::GraphClient;
use adtrail_store::Store;
use adtrail_store::queue::SyncMessage;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use tracing::Instrument;

pub use run::{MAX_THUMBNAILS_PER_RUN, RunReport, Tokens};

/// Time kept back from the Lambda deadline: no new Meta read starts within
/// it, so the run saves what it has and records its outcome.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(60);

/// What every run needs, built once per process.
#[derive(Debug, Clone)]
pub struct Worker {
    pub store: Store,
    pub graph: GraphClient,
    pub clock: SharedClock,
    /// The operator's cadence: a live run whose lease time has passed
    /// syncs next this far on.
    pub interval: adtrail_domain::plan::SyncInterval,
    /// The operator's quiet cadence, for an account that delivered nothing.
    pub quiet_interval: adtrail_domain::plan::SyncInterval,
    /// The tokens this process opened, shared by its batches.
    pub tokens: std::sync::Arc<Tokens>,
}

/// Why a message goes back to the queue.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("the message body is not a sync message")]
    BadMessage(#[source] serde_json::Error),
    #[error(transparent)]
    Store(#[from] adtrail_store::StoreError),
}

/// The Lambda handler: each message in its own future, failures reported
/// per message.
///
/// # Errors
/// Never for one message's failure; those are batch item failures.
pub async fn handle(
    worker: &Worker,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    let stop_reads_at = stop_reads_at(event.context.deadline);
    // SQS may hand the same run twice in one batch: run it once. A copy in
    // a later batch finds its run finished (or replaced) and does nothing.
    let mut seen = std::collections::HashSet::new();
    let records: Vec<_> = event
        .payload
        .records
        .iter()
        .filter(|r| seen.insert(r.body.clone()))
        .collect();
    let tokens = worker.tokens.as_ref();
    let runs = records.into_iter().map(|record| async move {
        let id = record.message_id.clone().unwrap_or_default();
        let result = match serde_json::from_str::<SyncMessage>(record.body.as_deref().unwrap_or("")) {
            Ok(message) => {
                let span = tracing::info_span!("sync_run", site_id = %message.site_id, ad_account_id = %message.ad_account_id, run_id = %message.run_id);
                let run = async {
                    let report = worker.run_with(&message, stop_reads_at, tokens).await?;
                    account_for(&message, &report);
                    Ok::<_, WorkerError>(())
                };
                run.instrument(span).await
            }
            Err(e) => Err(WorkerError::BadMessage(e)),
        };
        (id, result)
    });
    let mut response = SqsBatchResponse::default();
    for (id, result) in futures::future::join_all(runs).await {
        if let Err(error) = result {
            tracing::error!(message_id = %id, error = %error, cause = ?std::error::Error::source(&error).map(ToString::to_string), "sync message failed");
            response.add_failure(id);
        }
    }
    Ok(response)
}

/// A finished run's metrics and its one log line with its figures (the
/// span adds the site, the account and the run).
fn account_for(message: &SyncMessage, report: &RunReport) {
    use adtrail_domain::telemetry::{SPEND_ROWS_WRITTEN, SYNC_RUNS};
    if report.stale {
        return;
    }
    adtrail_store::telemetry::note("siteIds", message.site_id.as_str());
    adtrail_store::telemetry::note("adAccountIds", message.ad_account_id.as_str());
    metrics::counter!(SYNC_RUNS, "Outcome" => report.outcome).increment(1);
    metrics::counter!(SPEND_ROWS_WRITTEN).increment(report.rows_written as u64);
    tracing::info!(
        outcome = report.outcome,
        rows_written = report.rows_written,
        rows_dropped = report.rows_dropped,
        thumbnails = report.thumbnails,
        ads_named = report.ads_named,
        usage_pct = report.usage_pct,
        lost_lease = report.lost_lease,
        "sync run done"
    );
}

/// When to stop starting Meta reads, from the invocation's deadline (epoch
/// ms; 0 outside Lambda, where a run gets what Lambda's longest timeout,
/// 15 minutes, would give).
fn stop_reads_at(deadline_ms: u64) -> Instant {
    adtrail_http::Deadline::from_lambda_ms(deadline_ms, DEADLINE_MARGIN).map_or_else(
        || Instant::now() + Duration::from_secs(14 * 60).saturating_sub(DEADLINE_MARGIN),
        adtrail_http::Deadline::instant,
    )
}
