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
    /// transactions as DynamoDB's 100-item cap allows. Each row is written
    /// only if it still holds what the change was computed from, so two
    /// executions of one run (both holding its lease) never add a day's
    /// delta twice. Stops, having written nothing more, at the first
    /// transaction that fails a condition, and says which.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn write_spend(
        &self,
        cond: &LeaseCondition,
        changes: &[RowChange],
    ) -> Result<SpendWrite, StoreError> {
        let mut chunk: Vec<&RowChange> = vec![];
        let mut days = std::collections::BTreeSet::new();
        for change in changes {
            let new_day = !days.contains(&change.day());
            if 1 + chunk.len() + days.len() + 1 + usize::from(new_day) > MAX_TRANSACTION_ITEMS {
                let written = self.write_spend_chunk(cond, &chunk).await?;
                if written != SpendWrite::Written {
                    return Ok(written);
                }
                chunk.clear();
                days.clear();
            }
            days.insert(change.day());
            chunk.push(change);
        }
        if chunk.is_empty() {
            return Ok(SpendWrite::Written);
        }
        self.write_spend_chunk(cond, &chunk).await
    }

    async fn write_spend_chunk(
        &self,
        cond: &LeaseCondition,
        chunk: &[&RowChange],
    ) -> Result<SpendWrite, StoreError> {
        let t = &self.names.table;
        let (site, account) = (cond.site_id(), cond.ad_account_id());
        let mut items = vec![cond.check(t)?];
        let mut deltas: BTreeMap<i64, SpendFigures> = BTreeMap::new();
        for change in chunk {
            deltas.entry(change.day()).or_default().add(change.delta());
            items.push(match change {
                RowChange::Put { row, old } => {
                    let (condition, values) = as_read(*old);
                    let put = Put::builder()
                        .condition_expression(condition)
                        .set_expression_attribute_values(values)
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
                    let (condition, values) = as_read(Some(row.figures));
                    let delete = Delete::builder()
                        .condition_expression(condition)
                        .set_expression_attribute_values(values)
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
            return Ok(SpendWrite::Written);
        }
        Ok(match self.transact(items).await? {
            None => SpendWrite::Written,
            Some(0) => SpendWrite::LostLease,
            Some(_) => SpendWrite::Stale,
        })
    }
}

/// How a spend write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendWrite {
    Written,
    /// The run's lease is gone: nothing more was written.
    LostLease,
    /// A row no longer holds what the change was computed from (another
    /// execution of the run wrote it first): read again and recompute.
    Stale,
}

/// The condition that a row still holds `old` (or is absent), with its
/// values.
fn as_read(old: Option<SpendFigures>) -> (&'static str, Option<Item>) {
    match old {
        None => ("attribute_not_exists(pk)", None),
        Some(f) => (
            "spendCents = :oldSpend AND impressions = :oldImpressions AND clicks = :oldClicks",
            Some(
                [
                    (":oldSpend".to_owned(), n(f.spend_cents)),
                    (":oldImpressions".to_owned(), n(f.impressions)),
                    (":oldClicks".to_owned(), n(f.clicks)),
                ]
                .into(),
            ),
        ),
    }
}
