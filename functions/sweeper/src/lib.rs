//! The sweeper, every 5 minutes: purges the spend of unlinked accounts in
//! bounded batches (each batch conditional on the account still being
//! unlinked, so a relink stops it), a fixed budget per invocation.

use adtrail_store::spend::PurgeStep;
use adtrail_store::{Aws, StoreError};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use serde::Serialize;

/// Purges looked at per shard of the work index.
const PURGES_PER_SHARD: i32 = 10;
/// Spend rows deleted per purge step.
const ROWS_PER_STEP: usize = 500;
/// Purge steps per invocation.
const MAX_STEPS: usize = 40;

#[derive(Debug, Clone)]
pub struct Sweeper {
    pub aws: Aws,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    pub purges_done: usize,
    pub purges_stopped_by_relink: usize,
    pub purge_steps: usize,
}

impl Sweeper {
    /// One sweep.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails; the next sweep goes on.
    pub async fn sweep(&self) -> Result<SweepReport, StoreError> {
        let mut report = SweepReport::default();
        let purges = self.aws.pending_purges(PURGES_PER_SHARD).await?;
        'purges: for (site, account) in purges {
            loop {
                if report.purge_steps >= MAX_STEPS {
                    break 'purges;
                }
                report.purge_steps += 1;
                match self.aws.purge_step(&site, &account, ROWS_PER_STEP).await? {
                    PurgeStep::More => continue,
                    PurgeStep::Done => report.purges_done += 1,
                    PurgeStep::Relinked => report.purges_stopped_by_relink += 1,
                }
                tracing::info!(site_id = %site, ad_account_id = %account, "purge ended");
                break;
            }
        }
        Ok(report)
    }
}

/// The Lambda handler for the 5-minute schedule.
///
/// # Errors
/// [`StoreError`] when AWS fails.
pub async fn handle(
    sweeper: &Sweeper,
    _event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<SweepReport, lambda_runtime::Error> {
    Ok(sweeper.sweep().await?)
}
