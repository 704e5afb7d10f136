//! Spend per ad and account-local day, and the site-day sums kept in step
//! with it.
//!
//! Every change to spend rows goes through [`Aws::write_spend`]: one
//! transaction holds the lease check, the row puts and deletes, and an `ADD`
//! of the difference to each day's sum, so the sums always equal the rows
//! they sum, whatever fails in between.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};

use crate::attr::{Item, get_n, get_s, n, s};
use crate::keys::*;
use crate::links::LeaseCondition;
use crate::{Aws, StoreError};

/// DynamoDB's cap on the items of one transaction.
const MAX_TRANSACTION_ITEMS: usize = 100;

/// What an ad (or an account, or a site) spent and earned on a day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendFigures {
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
}

impl SpendFigures {
    pub fn add(&mut self, other: SpendFigures) {
        self.spend_cents += other.spend_cents;
        self.impressions += other.impressions;
        self.clicks += other.clicks;
    }
    fn minus(self, other: SpendFigures) -> SpendFigures {
        SpendFigures {
            spend_cents: self.spend_cents - other.spend_cents,
            impressions: self.impressions - other.impressions,
            clicks: self.clicks - other.clicks,
        }
    }
    fn is_zero(&self) -> bool {
        *self == SpendFigures::default()
    }
    fn from_item(item: &Item) -> Self {
        Self {
            spend_cents: get_n(item, "spendCents").unwrap_or(0),
            impressions: get_n(item, "impressions").unwrap_or(0),
            clicks: get_n(item, "clicks").unwrap_or(0),
        }
    }
}

/// One stored spend row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendRow {
    pub day_start: i64,
    pub ad_id: String,
    pub figures: SpendFigures,
    /// The start of the run that last wrote it.
    pub updated_at: i64,
}

/// A change to one row: its new figures, or its removal.
#[derive(Debug, Clone)]
pub enum RowChange {
    Put {
        row: SpendRow,
        old: Option<SpendFigures>,
    },
    Delete {
        row: SpendRow,
    },
}

impl RowChange {
    fn day(&self) -> i64 {
        match self {
            Self::Put { row, .. } | Self::Delete { row } => row.day_start,
        }
    }
    fn delta(&self) -> SpendFigures {
        match self {
            Self::Put { row, old } => row.figures.minus(old.unwrap_or_default()),
            Self::Delete { row } => SpendFigures::default().minus(row.figures),
        }
    }
}

/// How a purge step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeStep {
    /// More rows remain; call again.
    More,
    /// Every row and sum is gone.
    Done,
    /// The account was linked to the site again: the purge stops.
    Relinked,
}

impl Aws {
    /// The stored rows of an account at a site between two day starts
    /// (inclusive), at most `cap` (paged). Answers the rows and whether the
    /// cap cut them short.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn spend_rows(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
        cap: usize,
    ) -> Result<(Vec<SpendRow>, bool), StoreError> {
        let mut rows = vec![];
        let mut capped = false;
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(spend_pk(site, account)))
            .expression_attribute_values(":from", s(day_sk(first_day)))
            // `~` sorts after every digit: the whole last day is included.
            .expression_attribute_values(":to", s(format!("{}~", day_sk(last_day))))
            .consistent_read(true);
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                let Some((day_start, ad)) = get_s(item, SK).and_then(parse_spend_sk) else {
                    continue;
                };
                if rows.len() >= cap {
                    capped = true;
                    return false;
                }
                rows.push(SpendRow {
                    day_start,
                    ad_id: ad.to_owned(),
                    figures: SpendFigures::from_item(item),
                    updated_at: get_n(item, "updatedAt").unwrap_or(0),
                });
            }
            true
        })
        .await?;
        Ok((rows, capped))
    }

    /// The site-day sums of one account between two day starts, inclusive.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn day_sums(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
    ) -> Result<BTreeMap<i64, SpendFigures>, StoreError> {
        Ok(self
            .day_sums_capped(site, account, first_day, last_day, usize::MAX)
            .await?
            .0)
    }

    /// [`Aws::day_sums`], at most `cap` days; answers whether the cap cut
    /// them short.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn day_sums_capped(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
        cap: usize,
    ) -> Result<(BTreeMap<i64, SpendFigures>, bool), StoreError> {
        let mut sums = BTreeMap::new();
        let mut capped = false;
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(sum_pk(site, account)))
            .expression_attribute_values(":from", s(day_sk(first_day)))
            .expression_attribute_values(":to", s(day_sk(last_day)));
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                if let Some(day) = get_s(item, SK).and_then(parse_day_sk) {
                    if sums.len() >= cap {
                        capped = true;
                        return false;
                    }
                    sums.insert(day, SpendFigures::from_item(item));
                }
            }
            true
        })
        .await?;
        Ok((sums, capped))
    }

    /// Writes row changes under `cond`, with the day sums in step, in as few
    /// transactions as DynamoDB's 100-item cap allows. Answers `false`, having
    /// written nothing more, as soon as the condition fails.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn write_spend(
        &self,
        cond: &LeaseCondition,
        changes: &[RowChange],
    ) -> Result<bool, StoreError> {
        let mut chunk: Vec<&RowChange> = vec![];
        let mut days = std::collections::BTreeSet::new();
        for change in changes {
            let new_day = !days.contains(&change.day());
            if 1 + chunk.len() + days.len() + 1 + usize::from(new_day) > MAX_TRANSACTION_ITEMS {
                if !self.write_spend_chunk(cond, &chunk).await? {
                    return Ok(false);
                }
                chunk.clear();
                days.clear();
            }
            days.insert(change.day());
            chunk.push(change);
        }
        if chunk.is_empty() {
            return Ok(true);
        }
        self.write_spend_chunk(cond, &chunk).await
    }

    async fn write_spend_chunk(
        &self,
        cond: &LeaseCondition,
        chunk: &[&RowChange],
    ) -> Result<bool, StoreError> {
        let t = &self.names.table;
        let (site, account) = (cond.site_id(), cond.ad_account_id());
        let mut items = vec![cond.check(t)?];
        let mut deltas: BTreeMap<i64, SpendFigures> = BTreeMap::new();
        for change in chunk {
            deltas.entry(change.day()).or_default().add(change.delta());
            items.push(match change {
                RowChange::Put { row, .. } => {
                    let put = Put::builder()
                        .table_name(t)
                        .item(PK, s(spend_pk(site, account)))
                        .item(SK, s(spend_sk(row.day_start, &row.ad_id)))
                        .item("adId", s(&row.ad_id))
                        .item("dayStart", n(row.day_start))
                        .item("spendCents", n(row.figures.spend_cents))
                        .item("impressions", n(row.figures.impressions))
                        .item("clicks", n(row.figures.clicks))
                        .item("updatedAt", n(row.updated_at))
                        .build()
                        .map_err(StoreError::ddb)?;
                    TransactWriteItem::builder().put(put).build()
                }
                RowChange::Delete { row } => {
                    let delete = Delete::builder()
                        .table_name(t)
                        .key(PK, s(spend_pk(site, account)))
                        .key(SK, s(spend_sk(row.day_start, &row.ad_id)))
                        .build()
                        .map_err(StoreError::ddb)?;
                    TransactWriteItem::builder().delete(delete).build()
                }
            });
        }
        for (day, delta) in deltas {
            if delta.is_zero() {
                continue;
            }
            let update = Update::builder()
                .table_name(t)
                .key(PK, s(sum_pk(site, account)))
                .key(SK, s(day_sk(day)))
                .update_expression("ADD spendCents :s, impressions :i, clicks :c")
                .expression_attribute_values(":s", n(delta.spend_cents))
                .expression_attribute_values(":i", n(delta.impressions))
                .expression_attribute_values(":c", n(delta.clicks))
                .build()
                .map_err(StoreError::ddb)?;
            items.push(TransactWriteItem::builder().update(update).build());
        }
        if items.len() == 1 {
            return Ok(true);
        }
        self.transact_under_lease(items).await
    }

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
            let changes: Vec<RowChange> = rows
                .into_iter()
                .map(|row| RowChange::Delete { row })
                .collect();
            if !self.write_spend(&cond, &changes).await? {
                self.drop_purge_marker(site, account).await?;
                return Ok(PurgeStep::Relinked);
            }
            return Ok(PurgeStep::More);
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
            let out = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .index_name(WORK_INDEX)
                .key_condition_expression("workShard = :shard")
                .expression_attribute_values(":shard", s(purge_shard_n(shard)))
                .limit(per_shard)
                .send()
                .await
                .map_err(StoreError::ddb)?;
            for item in out.items() {
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
