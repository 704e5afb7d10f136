//! Spend per ad and account-local day, and the site-day sums kept in step
//! with it.
//!
//! Every change to spend rows goes through [`Spend::write_spend`]: one
//! transaction holds the lease check, the row puts and deletes, and an `ADD`
//! of the difference to each day's sum, so the sums always equal the rows
//! they sum, whatever fails in between.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};

use adtrail_domain::spend::{RowChange, SpendFigures, SpendRow};

use crate::attr::{Item, get_n, get_s, n, s};
use crate::items::{FiguresItem, decode};
use crate::keys::*;
use crate::lease::LeaseCondition;
use crate::{Spend, StoreError};

/// DynamoDB's cap on the items of one transaction.
pub(crate) const MAX_TRANSACTION_ITEMS: usize = 100;

/// A row's or a sum's figures.
pub(crate) fn figures_of(item: &Item) -> Result<SpendFigures, StoreError> {
    Ok(decode::<FiguresItem>(item, "spend figures")?.into())
}

impl Spend<'_> {
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
                    return Ok(false);
                }
                rows.push(SpendRow {
                    day_start,
                    ad_id: ad.to_owned(),
                    figures: figures_of(item)?,
                    updated_at: get_n(item, "updatedAt").unwrap_or(0),
                });
            }
            Ok(true)
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

    /// [`Spend::day_sums`], at most `cap` days; answers whether the cap cut
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
                        return Ok(false);
                    }
                    sums.insert(day, figures_of(item)?);
                }
            }
            Ok(true)
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
}
