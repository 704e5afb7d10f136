//! The dispatcher: on the 1-minute schedule (or a `SyncRequested` event) it
//! takes the links whose sync has come, leases each under a fresh `runId`
//! with a conditional write, and sends one SQS message per leased run, ten
//! per request. It finds them two ways: in the sharded `due` index, links
//! whose next sync is a time of their own (a new link's backfill, a
//! back-off, a sync asked for), and on its walk of each cadence's cycle in
//! the `slot` index, links that keep their cadence: each tick reads the
//! slots whose time came since the last tick's walk (the cursor), so such a
//! link is found once a cycle and its entry never moves.
//!
//! Two dispatchers running at once send exactly one message per due link:
//! the lease is conditional on the link still being due, and a lease moves
//! the link's next sync on by the lease ([`SyncInterval`], the next live
//! sync).

use adtrail_domain::links::Cadence;
use adtrail_domain::plan::SyncInterval;
use adtrail_domain::slots::SlotWalk;
use adtrail_domain::time::SharedClock;
use adtrail_store::lease::Found;
use adtrail_store::queue::SyncMessage;
use adtrail_store::slots::Cursor;
use adtrail_store::{Store, StoreError};
use aws_lambda_events::eventbridge::EventBridgeEvent;
use lambda_runtime::LambdaEvent;
use serde::Serialize;

/// Links taken from each shard of `due` per query.
const PER_SHARD: i32 = 25;
/// Rounds of queries of `due` per invocation: bounds one invocation's work.
const MAX_ROUNDS: usize = 8;
/// Links taken from a cadence's slots per invocation: as many as all the
/// rounds of `due` take; the walk goes on from there at the next tick.
pub const SLOT_BUDGET: i32 = PER_SHARD * adtrail_store::keys::DUE_SHARDS as i32 * MAX_ROUNDS as i32;

#[derive(Debug, Clone)]
pub struct Dispatcher {
    pub store: Store,
    pub clock: SharedClock,
    /// The operator's cadence: each lease's length.
    pub interval: SyncInterval,
    /// The quiet cadence, whose cycle the quiet accounts' slots are walked
    /// on (never shorter than `interval`).
    pub quiet_interval: SyncInterval,
    /// Links a cadence's walk takes per invocation ([`SLOT_BUDGET`]).
    pub slot_budget: i32,
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
            self.lease_and_send(due, Found::Due, now, &mut report)
                .await?;
            // Another round only when a shard had more than one page due.
            if !more {
                break;
            }
        }
        self.walk_slots(&mut report).await?;
        // A tick that found nothing due (most of them) writes no log line.
        if report.leased > 0 {
            tracing::info!(leased = report.leased, sent = report.sent, "dispatch done");
        }
        Ok(report)
    }

    /// Each cadence's walk from where the cursor says to now: the links
    /// at the slots whose time came, leased; then the cursor moved on to
    /// where the walks reached (short of now when a walk met its budget).
    async fn walk_slots(&self, report: &mut DispatchReport) -> Result<(), StoreError> {
        let links = self.store.links();
        let now = self.clock.now_ms();
        let cursor = links.dispatch_cursor().await?;
        let mut reached = Cursor::default();
        for cadence in [Cadence::Interval, Cadence::Quiet] {
            let cycle = match cadence {
                Cadence::Interval => self.interval.ms(),
                Cadence::Quiet => self.quiet_interval.ms().max(self.interval.ms()),
            };
            // With no cursor (the first tick, or the item lost), a whole
            // cycle: a link found before its time is only refused its lease.
            let walk = SlotWalk::new(cursor.of(cadence).unwrap_or(i64::MIN), now, cycle);
            let mut at = walk.end();
            let mut budget = self.slot_budget;
            'ranges: for range in walk.ranges() {
                if budget == 0 {
                    at = walk.reached_before(range.lo);
                    break;
                }
                let mut after = None;
                loop {
                    let limit = if budget > 0 { budget } else { PER_SHARD };
                    let (found, more) = links.slot_links(cadence, range, limit, after).await?;
                    budget = budget
                        .saturating_sub(i32::try_from(found.len()).unwrap_or(budget))
                        .max(0);
                    let last = found.last().map(|(_, _, slot)| *slot);
                    let found = found
                        .into_iter()
                        .map(|(site, acct, _)| (site, acct))
                        .collect();
                    self.lease_and_send(found, Found::Slot, now, report).await?;
                    let Some(page) = more else {
                        break;
                    };
                    // Out of budget: the next walk starts at the last slot
                    // read (its links may not all be in), provided that is
                    // past where this one started. More links at one slot
                    // than the budget are read on, a page at a time, until
                    // a later slot: a walk that restarted at the same slot
                    // every tick would never get past it.
                    if budget == 0
                        && let Some(slot) = last
                        && walk.reached_before(slot) > walk.start()
                    {
                        at = walk.reached_before(slot);
                        break 'ranges;
                    }
                    after = Some(page);
                }
            }
            match cadence {
                Cadence::Interval => reached.interval = Some(at),
                Cadence::Quiet => reached.quiet = Some(at),
            }
        }
        // Unchanged since the last tick (two ticks in one millisecond):
        // no write.
        if reached != cursor {
            links.advance_cursor(reached).await?;
        }
        Ok(())
    }

    /// Leases each link found and sends the runs' messages.
    async fn lease_and_send(
        &self,
        found: Vec<(String, String)>,
        how: Found,
        now: i64,
        report: &mut DispatchReport,
    ) -> Result<(), StoreError> {
        let mut messages = vec![];
        for (site_id, ad_account_id) in found {
            let run_id = uuid::Uuid::new_v4().to_string();
            if self
                .store
                .links()
                .lease_link(&site_id, &ad_account_id, &run_id, now, self.interval, how)
                .await?
            {
                // The run's own line ("sync run done") names it at INFO;
                // one a lease as well would double the log's bytes a run
                // (CloudWatch bills them).
                tracing::debug!(site_id = %site_id, ad_account_id = %ad_account_id, run_id = %run_id, "leased");
                messages.push(SyncMessage {
                    site_id,
                    ad_account_id,
                    run_id,
                });
            }
        }
        if messages.is_empty() {
            return Ok(());
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
        Ok(())
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
