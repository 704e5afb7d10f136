//! Spend left by an unlinked account: the unlink marks it, and the sweeper
//! deletes it in bounded batches under [`LeaseCondition::Unlinked`], so a
//! link made again meanwhile keeps what is its own.

use aws_sdk_dynamodb::types::{Delete, TransactWriteItem};

use adtrail_domain::spend::RowChange;

use crate::attr::{get_s, n, s};
use crate::keys::*;
use crate::lease::LeaseCondition;
use crate::spend::SpendWrite;
use crate::{Spend, StoreError};

/// DynamoDB's cap on the items of one transaction.
use crate::spend::MAX_TRANSACTION_ITEMS;

/// How a purge step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeStep {
    /// More rows may remain; call again. `rows`: the spend rows this
    /// step deleted (none when a sweeper beside it changed them first).
    More { rows: usize },
    /// Every row and sum is gone.
    Done,
    /// The account was linked to the site again: the purge stops.
    Relinked,
}

impl PurgeStep {
    /// The spend rows the step deleted.
    pub fn rows(self) -> usize {
        match self {
            PurgeStep::More { rows } => rows,
            PurgeStep::Done | PurgeStep::Relinked => 0,
        }
    }
}

impl Spend<'_> {
    /// Purges up to `max_rows` spend rows of an unlinked account at a site
    /// (sums in step), then, when none remain, its sums and the purge marker.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn purge_step(
        &self,
        site: &str,
        account: &str,
        max_rows: usize,
    ) -> Result<PurgeStep, StoreError> {
        let cond = LeaseCondition::Unlinked {
            site_id: site.into(),
            ad_account_id: account.into(),
        };
        let (rows, _) = self
            .spend_rows(site, account, 0, 9_999_999_999_999, max_rows)
            .await?;
        if !rows.is_empty() {
            let count = rows.len();
            let changes: Vec<RowChange> = rows
                .into_iter()
                .map(|row| RowChange::Delete { row })
                .collect();
            return Ok(match self.write_spend(&cond, &changes).await? {
                SpendWrite::LostLease => {
                    self.drop_purge_marker(site, account).await?;
                    PurgeStep::Relinked
                }
                // A row changed since it was read (a sweeper beside this
                // one): the next step reads again.
                SpendWrite::Written | SpendWrite::Ended => PurgeStep::More { rows: count },
                SpendWrite::Stale => PurgeStep::More { rows: 0 },
            });
        }
        // The rows are gone, so every sum is zero: drop the items.
        let sums = self.day_sums(site, account, 0, 9_999_999_999_999).await?;
        for days in sums
            .keys()
            .copied()
            .collect::<Vec<_>>()
            .chunks(MAX_TRANSACTION_ITEMS - 1)
        {
            let mut items = vec![cond.check(&self.names.table)?];
            for day in days {
                let delete = Delete::builder()
                    .table_name(&self.names.table)
                    .key(PK, s(sum_pk(site, account)))
                    .key(SK, s(day_sk(*day)))
                    .build()
                    .map_err(StoreError::ddb)?;
                items.push(TransactWriteItem::builder().delete(delete).build());
            }
            if !self.transact_under_lease(items).await? {
                self.drop_purge_marker(site, account).await?;
                return Ok(PurgeStep::Relinked);
            }
        }
        self.drop_purge_marker(site, account).await?;
        Ok(PurgeStep::Done)
    }

    /// Records (again) that an unlinked account's spend must leave the site:
    /// for a run that wrote after the unlink's own purge.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn mark_purge(&self, site: &str, account: &str, now: i64) -> Result<(), StoreError> {
        self.ddb
            .put_item()
            .table_name(&self.names.table)
            .item(PK, s(purge_pk(site)))
            .item(SK, s(account))
            .item("siteId", s(site))
            .item("adAccountId", s(account))
            .item(WORK_SHARD, s(purge_shard(site, account)))
            .item(WORK_AT, n(now))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(())
    }

    async fn drop_purge_marker(&self, site: &str, account: &str) -> Result<(), StoreError> {
        self.ddb
            .delete_item()
            .table_name(&self.names.table)
            .key(PK, s(purge_pk(site)))
            .key(SK, s(account))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(())
    }

    /// Pending purges, `per_shard` at most from each shard of the `work`
    /// index: `(siteId, adAccountId)`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn pending_purges(
        &self,
        per_shard: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut found = vec![];
        for shard in 0..WORK_SHARDS {
            let items = self
                .work_shard(purge_shard_n(shard), None, per_shard)
                .await?;
            for item in &items {
                if let (Some(pk), Some(sk)) = (get_s(item, PK), get_s(item, SK))
                    && let Some(site) = parse_purge_pk(pk)
                {
                    found.push((site.to_owned(), sk.to_owned()));
                }
            }
        }
        Ok(found)
    }
}
