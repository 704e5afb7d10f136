//! A sync run's hold on its link: the dispatcher finds due links (sharded
//! by next sync time) and leases each for one run under a new `runId`;
//! every write the run makes carries [`LeaseCondition`]; the run's end is
//! recorded only while it still holds the link. Pausing, resuming and
//! "sync now" move the same due time. A link that keeps its cadence sits
//! in the `slot` index instead ([`crate::keys`]), found by the dispatcher's
//! walk of the cycle ([`adtrail_domain::slots`]).

use adtrail_domain::links::{SiteAdAccount, SlotPlace};
use adtrail_domain::outcome::{LinkUpdate, SyncState};
use adtrail_domain::plan::SyncInterval;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, ReturnValue, TransactWriteItem};

use crate::attr::{get_s, n, s};
use crate::keys::*;
use crate::links::key;
use crate::write::applied;
use crate::{Links, StoreError};

mod ending;

pub(crate) use ending::{Ending, ending};

/// Where the dispatcher found a due link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// In `due`: its next sync time came.
    Due,
    /// At its slot, on the walk of its cadence's cycle.
    Slot,
}

/// A link's schedule as a run read it at its ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    /// Its next sync time (the lease's, while the run holds it).
    pub next_sync_at: Option<i64>,
    pub sync_requested: bool,
    /// The slot it keeps, if it keeps one.
    pub slot: Option<SlotPlace>,
}

/// The condition every write of a sync run (or of a purge) carries.
#[derive(Debug, Clone)]
pub enum LeaseCondition {
    /// The run still holds the link.
    Run {
        site_id: String,
        ad_account_id: String,
        run_id: String,
    },
    /// The account is not linked to the site (a purge after an unlink).
    Unlinked {
        site_id: String,
        ad_account_id: String,
    },
}

impl LeaseCondition {
    pub fn site_id(&self) -> &str {
        match self {
            Self::Run { site_id, .. } | Self::Unlinked { site_id, .. } => site_id,
        }
    }
    pub fn ad_account_id(&self) -> &str {
        match self {
            Self::Run { ad_account_id, .. } | Self::Unlinked { ad_account_id, .. } => ad_account_id,
        }
    }

    /// The `ConditionCheck` item that goes first in every transaction.
    pub fn check(&self, table: &str) -> Result<TransactWriteItem, StoreError> {
        let builder = ConditionCheck::builder()
            .table_name(table)
            .key(PK, s(site_pk(self.site_id())))
            .key(SK, s(link_sk(self.ad_account_id())));
        let check = match self {
            Self::Run { run_id, .. } => builder
                .condition_expression("runId = :run")
                .expression_attribute_values(":run", s(run_id)),
            Self::Unlinked { .. } => builder.condition_expression("attribute_not_exists(pk)"),
        }
        .build()
        .map_err(StoreError::ddb)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }
}

impl Links<'_> {
    /// Links whose next sync has come, `per_shard` at most from each shard
    /// of the `due` index. Answers `(siteId, adAccountId)` pairs, and whether
    /// a shard may hold more.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn due_links(
        &self,
        now: i64,
        per_shard: i32,
    ) -> Result<(Vec<(String, String)>, bool), StoreError> {
        let queries = (0..DUE_SHARDS).map(|shard| {
            self.ddb
                .query()
                .table_name(&self.names.table)
                .index_name(DUE_INDEX)
                .key_condition_expression("dueShard = :shard AND nextSyncAt <= :now")
                .expression_attribute_values(":shard", s(due_shard_n(shard)))
                .expression_attribute_values(":now", n(now))
                .limit(per_shard)
                .send()
        });
        let mut due = vec![];
        let mut more = false;
        for out in futures::future::join_all(queries).await {
            let out = out.map_err(StoreError::ddb)?;
            more |= out.last_evaluated_key.is_some();
            for item in out.items() {
                let (Some(pk), Some(sk)) = (get_s(item, PK), get_s(item, SK)) else {
                    continue;
                };
                if let Some((site, acct)) = parse_link_keys(pk, sk) {
                    due.push((site.to_owned(), acct.to_owned()));
                }
            }
        }
        Ok((due, more))
    }

    /// Takes a due link for a new run: succeeds only while its next sync
    /// has come (so two dispatchers never both take it), and moves the
    /// next sync on by the lease (the link's own `leaseMs`, a quiet
    /// account's, or the interval's). A link found in `due` is due again at
    /// the lease's end from now; one found at its slot, a lease after its
    /// last slot time, which keeps the slot (and moves no index entry). A
    /// previous run still holding it is recorded as `RUN_TIMEOUT`. Answers
    /// whether this call took it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn lease_link(
        &self,
        site: &str,
        account: &str,
        run_id: &str,
        now: i64,
        interval: SyncInterval,
        found: Found,
    ) -> Result<bool, StoreError> {
        let (condition, update) = match found {
            Found::Due => (
                "attribute_exists(pk) AND attribute_exists(dueShard) AND nextSyncAt <= :now",
                "SET runId = :run, runStartedAt = :now, nextSyncAt = if_not_exists(leaseMs, :lease) + :now",
            ),
            Found::Slot => (
                "attribute_exists(pk) AND attribute_exists(slotShard) AND slotAt <= :now",
                "SET runId = :run, runStartedAt = :now, slotAt = slotAt + if_not_exists(leaseMs, :lease)",
            ),
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression(condition)
            .update_expression(update)
            .expression_attribute_values(":run", s(run_id))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":lease", n(interval.lease_ms()))
            .return_values(ReturnValue::UpdatedOld)
            .send()
            .await;
        let Some(out) = applied(res)? else {
            return Ok(false);
        };
        let old = out.attributes.unwrap_or_default();
        if get_s(&old, "runId").is_some() {
            // The run before never finished: say so. Its writes are refused
            // from here on, since the link has a new run; what it saved of
            // the catalog is not known, so the next run reads the catalog.
            self.ddb
                .update_item()
                .table_name(&self.names.table)
                .set_key(Some(key(site, account).into_iter().collect()))
                .condition_expression("runId = :run")
                .update_expression("SET lastError = :err REMOVE catalogDigest")
                .expression_attribute_values(":run", s(run_id))
                .expression_attribute_values(
                    ":err",
                    s(adtrail_domain::error_codes::last_error(
                        adtrail_domain::error_codes::LastErrorCode::RunTimeout,
                        "the previous sync did not finish",
                    )),
                )
                .send()
                .await
                .map_err(StoreError::ddb)?;
        }
        Ok(true)
    }

    /// Records how a run ended, if it still holds the link, as [`ending`]
    /// makes it of what the run read (`seen`). Answers whether it did.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn finish_run(
        &self,
        site: &str,
        account: &str,
        run_id: &str,
        u: &LinkUpdate,
        seen: &Seen,
    ) -> Result<bool, StoreError> {
        let Ending {
            set,
            remove,
            condition,
            mut values,
        } = ending(site, account, u, seen);
        values.insert(":run".to_owned(), s(run_id));
        let condition: Vec<&str> = std::iter::once("runId = :run").chain(condition).collect();
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression(condition.join(" AND "))
            .update_expression(format!(
                "SET {} REMOVE {}",
                set.join(", "),
                remove.join(", ")
            ))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }

    /// Stops a link until its connection gets a usable token again: out of
    /// the due index, its run released, `syncState: error`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn pause_link(
        &self,
        site: &str,
        account: &str,
        last_error: &str,
    ) -> Result<(), StoreError> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(pk)")
            .update_expression(
                "SET syncState = :error, lastError = :err REMOVE runId, syncRequested, runStartedAt, nextSyncAt, dueShard, slotShard, slot, slotAt, catalogDigest",
            )
            .expression_attribute_values(":error", s(SyncState::Error.as_str()))
            .expression_attribute_values(":err", s(last_error))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }

    /// Puts a paused link back in the due index, due now.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn resume_link(&self, link: &SiteAdAccount, now: i64) -> Result<(), StoreError> {
        let state = if link.synced() {
            SyncState::Live
        } else {
            SyncState::Backfill
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(&link.site_id, &link.ad_account_id).into_iter().collect()))
            .condition_expression(
                "attribute_exists(pk) AND attribute_not_exists(dueShard) AND attribute_not_exists(slotShard)",
            )
            .update_expression("SET syncState = :state, nextSyncAt = :now, dueShard = :shard, failures = :zero REMOVE lastError")
            .expression_attribute_values(":state", s(state.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":shard", s(due_shard(&link.site_id, &link.ad_account_id)))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }

    /// Asks for a sync of one link now, or right after the run holding it,
    /// overriding a back-off. A paused link stays paused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn request_sync(
        &self,
        site: &str,
        account: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let idle = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            // A slotted link leaves its slot for `due`, due now.
            .condition_expression(
                "(attribute_exists(dueShard) OR attribute_exists(slotShard)) AND attribute_not_exists(runId)",
            )
            .update_expression("SET nextSyncAt = :now, dueShard = :shard REMOVE slotShard, slot, slotAt")
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":shard", s(due_shard(site, account)))
            .send()
            .await;
        if applied(idle)?.is_some() {
            return Ok(());
        }
        let busy = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(runId)")
            .update_expression("SET syncRequested = :yes")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await;
        applied(busy)?;
        Ok(())
    }
}
