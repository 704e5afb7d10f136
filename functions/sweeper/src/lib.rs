//! The sweeper, every 5 minutes: purges the spend of unlinked accounts in
//! bounded batches (each batch conditional on the account still being
//! unlinked, so a relink stops it), and sends again the conversions whose
//! attempt was due more than 15 minutes ago (a send lost on the way: a
//! crash between the outbox write and the queue, a message gone), each
//! with a fixed budget per invocation. It also flags the Meta tokens with
//! under 7 days left as `expiringSoon` (and puts `ConnectionExpiringSoon`
//! on the bus), so a screen asks for a new login in time (a read never consults the clock). With Lead Ads on, it reconciles
//! each linked Page every 15 minutes (`reconcile.rs`). Its work is bounded
//! in count and, in each invocation, by its deadline ([`RESERVE`]): what
//! there is no time for (a purge step, a lost send, a Page's reads from
//! Meta) waits for the next sweep.

mod reconcile;

use adtrail_domain::capi::LOST_AFTER_MS;
use adtrail_domain::graph_error::EXPIRING_SOON_MS;
use adtrail_domain::time::SharedClock;
use adtrail_meta::GraphClient;
use adtrail_store::keys::WORK_SHARDS;
use adtrail_store::purge::PurgeStep;
use adtrail_store::queue::SendMessage;
use adtrail_store::recovery::{Late, Lost};
use adtrail_store::{Store, StoreError};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use serde::Serialize;

/// Purges looked at per shard of the work index.
const PURGES_PER_SHARD: i32 = 10;
/// Spend rows deleted per purge step.
const ROWS_PER_STEP: usize = 500;
/// Purge steps per invocation.
const MAX_STEPS: usize = 40;
/// Late conversions read per page of a shard.
const LATE_PAGE: i32 = 25;
/// Connections flagged as expiring soon per invocation.
const EXPIRING_PER_SWEEP: i32 = 100;
/// Pages per shard per invocation.
const MAX_LATE_PAGES: usize = 8;
/// Erasures looked at per shard of the work index.
const ERASURES_PER_SHARD: i32 = 5;
/// Items one sweep deletes of the sites being erased.
const ERASE_BUDGET: usize = 2_000;

/// Time kept back from the sweep's deadline (of its 120 seconds) for what
/// follows its last piece of work: the step, row or Page under way ended
/// and recorded, and the sweep's figures written. The work is bounded in
/// count, not time, and on a slow day for DynamoDB (or on moto, at about
/// 20 ms an item a transaction writes) 3,200 lost sends to recover can take
/// longer than the sweep has; Meta hanging on a Page's forms can take all
/// of it. Past the deadline less this the sweep takes no more work, and
/// what is left waits, still due, for the next sweep five minutes on,
/// where Lambda would end the sweep mid-work with nothing recorded.
pub const RESERVE: std::time::Duration = std::time::Duration::from_secs(15);

#[derive(Debug, Clone)]
pub struct Sweeper {
    pub store: Store,
    pub clock: SharedClock,
    /// Reads the linked Pages' forms for the reconciliation.
    pub graph: GraphClient,
    /// The stack's `LeadAds` parameter: off, no Page is reconciled.
    pub lead_ads: bool,
    /// When the sweep stops taking work: its invocation's deadline less
    /// [`RESERVE`], set by [`handle`]; `None` outside Lambda.
    pub deadline: Option<adtrail_http::Deadline>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepReport {
    pub purges_done: usize,
    pub purges_stopped_by_relink: usize,
    pub purge_steps: usize,
    /// Spend rows the purges deleted.
    pub rows_purged: usize,
    pub sends_requeued: usize,
    pub sends_failed: usize,
    pub tokens_expiring: usize,
    pub pages_reconciled: usize,
    pub form_leads_requeued: usize,
    /// Items deleted of sites being erased, and the erasures finished.
    pub items_erased: usize,
    pub erasures_done: usize,
}

impl Sweeper {
    /// Whether the sweep's time for work is up.
    fn out_of_time(&self) -> bool {
        self.deadline.is_some_and(|d| d.left().is_zero())
    }

    /// One sweep.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails; the next sweep goes on.
    pub async fn sweep(&self) -> Result<SweepReport, StoreError> {
        let mut report = SweepReport::default();
        let purges = self.store.spend().pending_purges(PURGES_PER_SHARD).await?;
        'purges: for (site, account) in purges {
            loop {
                if report.purge_steps >= MAX_STEPS || self.out_of_time() {
                    break 'purges;
                }
                report.purge_steps += 1;
                match self
                    .store
                    .spend()
                    .purge_step(&site, &account, ROWS_PER_STEP)
                    .await?
                {
                    PurgeStep::More { rows } => {
                        report.rows_purged += rows;
                        continue;
                    }
                    PurgeStep::Done => report.purges_done += 1,
                    PurgeStep::Relinked => report.purges_stopped_by_relink += 1,
                }
                tracing::info!(site_id = %site, ad_account_id = %account, "purge ended");
                break;
            }
        }
        self.erase_sites(&mut report).await?;
        self.recover_lost_sends(&mut report).await?;
        let expiring = self
            .store
            .connections()
            .flag_expiring(self.clock.now_ms() + EXPIRING_SOON_MS, EXPIRING_PER_SWEEP)
            .await?;
        report.tokens_expiring = expiring.len();
        self.announce_expiring(&expiring).await;
        if self.lead_ads {
            self.reconcile_pages(&mut report).await?;
        }
        Ok(report)
    }

    /// Erases the sites asked to be, within the sweep's budget: their items
    /// deleted, their thumbnails tagged for the bucket's lifecycle to
    /// expire, each erasure ended once nothing is left.
    async fn erase_sites(&self, report: &mut SweepReport) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        for erasure in self
            .store
            .sites()
            .pending_erasures(ERASURES_PER_SHARD)
            .await?
        {
            let left = ERASE_BUDGET.saturating_sub(report.items_erased);
            if left == 0 || self.out_of_time() {
                break;
            }
            let step = self.store.sites().erase_step(&erasure, left, now).await?;
            for key in &step.thumbnails {
                self.store.blobs().mark_unreferenced(key).await?;
            }
            report.items_erased += step.deleted;
            if step.done {
                report.erasures_done += 1;
                tracing::info!(site_id = %erasure.site_id, deleted_items = erasure.deleted_items, "site erased");
            }
        }
        Ok(())
    }

    /// `ConnectionExpiringSoon` for each token flagged now, so a host asks
    /// its owner for a new login in time. A bus failure is logged: the
    /// connection's `expiringSoon` still shows it.
    async fn announce_expiring(&self, flagged: &[(String, i64)]) {
        if flagged.is_empty() {
            return;
        }
        let details: Vec<serde_json::Value> = flagged
            .iter()
            .map(|(owner, at)| serde_json::json!({"ownerKey": owner, "expiresAt": at}))
            .collect();
        match self
            .store
            .bus()
            .put_events("ConnectionExpiringSoon", &details)
            .await
        {
            Ok(0) => {}
            Ok(refused) => tracing::warn!(refused, "EventBridge refused expiring-token events"),
            Err(error) => tracing::warn!(error = %error, "could not put expiring-token events"),
        }
    }

    /// Sends again what never reached the sender, a bounded page at a time
    /// per shard of the pending index.
    async fn recover_lost_sends(&self, report: &mut SweepReport) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        for shard in 0..WORK_SHARDS {
            if self.out_of_time() {
                break;
            }
            let mut after = None;
            // Rows a shard deals with in one sweep, whether found one by
            // one or through their send batches.
            let mut budget = MAX_LATE_PAGES * LATE_PAGE as usize;
            for _ in 0..MAX_LATE_PAGES {
                let (late, next) = self
                    .store
                    .conversions()
                    .late_sends(shard, now - LOST_AFTER_MS, LATE_PAGE, after)
                    .await?;
                let mut again = vec![];
                for entry in &late {
                    if self.out_of_time() {
                        // What was dealt with is queued below; the rest
                        // is found again by the next sweep.
                        budget = 0;
                    }
                    if budget == 0 {
                        break;
                    }
                    let (site, dealt) = match entry {
                        Late::Row(site, key) => {
                            let lost = self
                                .store
                                .conversions()
                                .recover_lost(site, key, LOST_AFTER_MS, now)
                                .await?;
                            (site, vec![(key.clone(), lost)])
                        }
                        Late::Batch(site, batch) => {
                            let dealt = self
                                .store
                                .conversions()
                                .sweep_batch(site, batch, LOST_AFTER_MS, now, budget)
                                .await?;
                            (site, dealt)
                        }
                    };
                    budget = budget.saturating_sub(dealt.len().max(1));
                    for (key, lost) in dealt {
                        match lost {
                            Lost::Requeued => again.push(SendMessage {
                                site_id: site.clone(),
                                key,
                            }),
                            Lost::Failed => report.sends_failed += 1,
                            Lost::Skipped | Lost::Settled => {}
                        }
                    }
                }
                report.sends_requeued += again.len();
                if !again.is_empty() {
                    let refused = self.store.queues().enqueue_sends(&again).await?;
                    if refused > 0 {
                        // Still pending: the next sweep finds them again.
                        tracing::warn!(refused, "SQS refused some sends");
                    }
                }
                match next {
                    Some(cursor) if budget > 0 => after = Some(cursor),
                    _ => break,
                }
            }
        }
        Ok(())
    }
}

/// The Lambda handler for the 5-minute schedule.
///
/// # Errors
/// [`StoreError`] when AWS fails.
pub async fn handle(
    sweeper: &Sweeper,
    event: LambdaEvent<EventBridgeEvent<serde_json::Value>>,
) -> Result<SweepReport, lambda_runtime::Error> {
    let deadline = adtrail_http::Deadline::from_lambda_ms(event.context.deadline, RESERVE);
    let sweeper = Sweeper {
        graph: sweeper.graph.within(deadline),
        deadline,
        ..sweeper.clone()
    };
    let report = sweeper.sweep().await?;
    if sweeper.out_of_time() {
        tracing::info!("the sweep's time ran out; the rest waits for the next sweep");
    }
    account_for(&report);
    Ok(report)
}

/// A sweep's metrics and its one log line with its figures.
fn account_for(report: &SweepReport) {
    use adtrail_domain::telemetry::{
        CONVERSIONS_FAILED, CONVERSIONS_RESENT, ROWS_PURGED, TOKENS_EXPIRING_SOON,
    };
    metrics::counter!(ROWS_PURGED).increment(report.rows_purged as u64);
    metrics::counter!(CONVERSIONS_RESENT).increment(report.sends_requeued as u64);
    // In the total the failure-rate alarm reads; the sender alone knows a
    // failure's platform reason.
    metrics::counter!(CONVERSIONS_FAILED).increment(report.sends_failed as u64);
    metrics::counter!(TOKENS_EXPIRING_SOON).increment(report.tokens_expiring as u64);
    tracing::info!(
        purges_done = report.purges_done,
        purges_stopped_by_relink = report.purges_stopped_by_relink,
        purge_steps = report.purge_steps,
        rows_purged = report.rows_purged,
        sends_requeued = report.sends_requeued,
        sends_failed = report.sends_failed,
        tokens_expiring = report.tokens_expiring,
        pages_reconciled = report.pages_reconciled,
        form_leads_requeued = report.form_leads_requeued,
        "sweep done"
    );
}
