//! The dispatcher: on the 1-minute schedule (or a `SyncRequested` event) it
//! takes the links whose next sync has come from the sharded `due` index,
//! leases each under a fresh `runId` with a conditional write, and sends one
//! SQS message per leased run, ten per request.
//!
//! Two dispatchers running at once send exactly one message per due link:
//! the lease is conditional on the link still being due, and a lease moves
//! the link's next sync on by the lease ([`SyncInterval`], the next live
//! sync).

use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::SharedClock;
use adtrail_store::queue::SyncMessage;
use adtrail_store::{Store, StoreError};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use serde::Serialize;

/// Links taken from each shard per query.
const PER_SHARD: i32 = 25;
/// Rounds of queries per invocation: bounds one invocation's work.
const MAX_ROUNDS: usize = 8;

#[derive(Debug, Clone)]
pub struct Dispatcher {
    pub store: Store,
    pub clock: SharedClock,
    /// The operator's cadence: each lease's length.
    pub interval: SyncInterval,
}

/// What one invocation did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DispatchReport {
    pub leased: usize,
    pub sent: usize,
}

impl Dispatcher {
    /// Leases every due link (bounded) and enqueues its run.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB or SQS fails; the schedule tries again
    /// in a minute, and a leased run whose message was lost ends as
    /// `RUN_TIMEOUT` after its lease.
    pub async fn dispatch(&self) -> Result<DispatchReport, StoreError> {
        let mut report = DispatchReport::default();
        for _ in 0..MAX_ROUNDS {
            let now = self.clock.now_ms();
            let (due, more) = self.store.links().due_links(now, PER_SHARD).await?;
            let mut messages = vec![];
            for (site_id, ad_account_id) in due {
                let run_id = uuid::Uuid::new_v4().to_string();
                if self
                    .store
                    .links()
                    .lease_link(&site_id, &ad_account_id, &run_id, now, self.interval)
                    .await?
                {
                    // The run's own line ("sync run done") names it at
                    // INFO; one a lease as well would double the log's
                    // bytes a run (CloudWatch bills them).
                    tracing::debug!(site_id = %site_id, ad_account_id = %ad_account_id, run_id = %run_id, "leased");
                    messages.push(SyncMessage {
                        site_id,
                        ad_account_id,
                        run_id,
                    });
                }
            }
            report.leased += messages.len();
            let refused = self.store.queues().enqueue_syncs(&messages).await?;
            if refused > 0 {
                tracing::warn!(
                    refused,
                    "SQS refused sync messages; their runs end as RUN_TIMEOUT and retry"
                );
            }
            report.sent += messages.len() - refused;
            // Another round only when a shard had more than one page due.
            if !more {
                break;
            }
        }
        // A tick that found nothing due (most of them) writes nothing.
        if report.leased > 0 {
            tracing::info!(leased = report.leased, sent = report.sent, "dispatch done");
        }
        Ok(report)
    }
}

/// The Lambda handler, for the schedule and for `SyncRequested` events
/// alike: either way, whatever is due goes.
///
/// # Errors
/// [`StoreError`] when AWS fails.
pub async fn handle(
    dispatcher: &Dispatcher,
    _event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<DispatchReport, lambda_runtime::Error> {
    Ok(dispatcher.dispatch().await?)
}
