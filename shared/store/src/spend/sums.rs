//! Reading the site-day sums: a day's sum is its sum item plus what the
//! account's link holds of it ([`held`]).
//!
//! A run moves held days from the link to their sum items, so a read that
//! took the link's days and then the sum items could count a day moved in
//! between twice (or, the other way round, not at all). Every read here
//! takes the links, then the sum items, then the links again, all strongly,
//! and reads again when what the links held of the range changed. A report
//! over many accounts reads its site's links in one query each time, not
//! one item an account: two requests a site, not two an account. And when
//! its budget of days cannot cut the read short, it reads the accounts' sum
//! items several at a time rather than one after another.

use std::collections::BTreeMap;

use adtrail_domain::spend::SpendFigures;
use adtrail_domain::time::DAY_MS;
use futures::StreamExt;

use super::{figures_of, held};
use crate::attr::{get_s, s};
use crate::keys::*;
use crate::{Spend, StoreError};

/// Each account's held days of a range (only accounts holding one).
type HeldDays = BTreeMap<String, BTreeMap<i64, SpendFigures>>;

/// How many times a read starts again when held days keep moving under it.
const TRIES: usize = 4;

/// Accounts' sum items read at once when no cap can cut them.
const QUERIES_AT_ONCE: usize = 8;

impl Spend<'_> {
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
    /// [`StoreError::Service`] when DynamoDB fails;
    /// [`StoreError::Condition`] when the held days kept moving.
    pub async fn day_sums_capped(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
        cap: usize,
    ) -> Result<(BTreeMap<i64, SpendFigures>, bool), StoreError> {
        let (mut sums, capped) = self
            .site_day_sums(site, &[account], first_day, last_day, cap)
            .await?;
        Ok((sums.remove(account).unwrap_or_default(), capped))
    }

    /// The site-day sums of several accounts of one site between two day
    /// starts, inclusive, at most `cap` days in all (taken in the order of
    /// `accounts`); answers whether the cap cut them short.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails;
    /// [`StoreError::Condition`] when the held days kept moving.
    pub async fn site_day_sums(
        &self,
        site: &str,
        accounts: &[&str],
        first_day: i64,
        last_day: i64,
        cap: usize,
    ) -> Result<(BTreeMap<String, BTreeMap<i64, SpendFigures>>, bool), StoreError> {
        if first_day > last_day || accounts.is_empty() {
            return Ok((BTreeMap::new(), false));
        }
        let range = first_day..=last_day;
        // A cap the range cannot reach (every account a row a day) leaves
        // nothing to cut in order: the accounts are read at once.
        let at_once = (((last_day - first_day) / DAY_MS) as usize)
            .saturating_add(1)
            .saturating_mul(accounts.len())
            <= cap;
        let mut before = self.held_days(site, accounts, &range).await?;
        for _ in 0..TRIES {
            let (mut left, mut capped) = (cap, false);
            let mut out = BTreeMap::new();
            let mut read_at_once = if at_once {
                self.sum_items_at_once(site, accounts, first_day, last_day)
                    .await?
                    .into_iter()
            } else {
                Vec::new().into_iter()
            };
            for account in accounts {
                let (mut sums, cut) = match read_at_once.next() {
                    Some(read) => read,
                    None => {
                        self.sum_items(site, account, first_day, last_day, left)
                            .await?
                    }
                };
                capped |= cut;
                for (day, figures) in before.get(*account).into_iter().flatten() {
                    if !sums.contains_key(day) && sums.len() >= left {
                        capped = true;
                        continue;
                    }
                    sums.entry(*day).or_default().add(*figures);
                }
                left -= sums.len();
                out.insert((*account).to_owned(), sums);
            }
            // Only a day held when first read can move under the read: with
            // none in the range (a past range), no second read.
            if before.is_empty() {
                return Ok((out, capped));
            }
            let after = self.held_days(site, accounts, &range).await?;
            if after == before {
                return Ok((out, capped));
            }
            before = after;
        }
        Err(StoreError::Condition(
            "an account's held day sums kept moving while read",
        ))
    }

    /// What the links of `accounts` hold of `range`, read strongly: one
    /// item for one account, the site's links in one query for more.
    async fn held_days(
        &self,
        site: &str,
        accounts: &[&str],
        range: &std::ops::RangeInclusive<i64>,
    ) -> Result<HeldDays, StoreError> {
        let items = match accounts {
            [account] => self
                .read_item(site_pk(site), &link_sk(account))
                .await?
                .into_iter()
                .collect(),
            _ => self.links().site_link_items(site).await?,
        };
        Ok(items
            .iter()
            .filter_map(|item| {
                let account = get_s(item, SK)?.strip_prefix(LINK_SK_PREFIX)?;
                if !accounts.contains(&account) {
                    return None;
                }
                let days: BTreeMap<i64, SpendFigures> = held::held_of(item)
                    .into_iter()
                    .filter(|(day, _)| range.contains(day))
                    .collect();
                (!days.is_empty()).then(|| (account.to_owned(), days))
            })
            .collect())
    }

    /// The sum items of each account between two day starts, all of them,
    /// [`QUERIES_AT_ONCE`] accounts at a time, in the accounts' order.
    async fn sum_items_at_once(
        &self,
        site: &str,
        accounts: &[&str],
        first_day: i64,
        last_day: i64,
    ) -> Result<Vec<(BTreeMap<i64, SpendFigures>, bool)>, StoreError> {
        // Indices, not the accounts' references: a stream over borrowed
        // items is not `Send` for every lifetime the handlers need.
        futures::stream::iter(0..accounts.len())
            .map(|i| self.sum_items(site, accounts[i], first_day, last_day, usize::MAX))
            .buffered(QUERIES_AT_ONCE)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect()
    }

    /// The sum items of one account between two day starts, at most `cap`.
    async fn sum_items(
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
            .expression_attribute_values(":to", s(day_sk(last_day)))
            .consistent_read(true);
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
}
