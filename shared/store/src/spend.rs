//! Spend per ad and account-local day, and the site-day sums kept in step
//! with it.
//!
//! Every change to spend rows goes through [`Spend::write_spend`] (or
//! [`Spend::write_spend_ending`], which also ends a run): one transaction
//! holds the lease check, the item puts and deletes, and an `ADD` of the
//! difference to each day's sum, so the sums always equal the rows they
//! sum, whatever fails in between. How rows are packed into
//! items is [`layout`]'s.

use std::collections::BTreeMap;

use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::outcome::LinkUpdate;
use adtrail_domain::spend::{RowChange, SpendFigures, SpendRow};

use crate::attr::{FromItem, Item, get_s, s};
use crate::items::{FiguresItem, decode};
use crate::keys::*;
use crate::lease::{self, Ending, LeaseCondition, Seen};
use crate::{Spend, StoreError};

pub(crate) mod held;
mod layout;
mod sums;

/// DynamoDB's cap on the items of one transaction.
pub(crate) const MAX_TRANSACTION_ITEMS: usize = 100;

/// A row's or a sum's figures.
pub(crate) fn figures_of(item: &Item) -> Result<SpendFigures, StoreError> {
    Ok(decode::<FiguresItem>(item, "spend figures")?.into())
}

impl Spend<'_> {
    /// The stored rows a run's changes are computed from, between two day
    /// starts (inclusive), read strongly or, for half the units,
    /// eventually: [`Spend::write_spend`] reads the days again strongly and
    /// refuses changes computed from rows that are no longer stored, so a
    /// stale read costs a retry, never a wrong row.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn rows_to_change(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
        consistent: bool,
    ) -> Result<Vec<SpendRow>, StoreError> {
        let query = self
            .spend_query(site, account, first_day, last_day)
            .consistent_read(consistent);
        Ok(self.rows_of(query, usize::MAX).await?.0)
    }

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
        let query = self.spend_query(site, account, first_day, last_day);
        self.rows_of(query, cap).await
    }

    /// The rows `query` finds, at most `cap`, in day and ad order, and
    /// whether the cap cut them short.
    async fn rows_of(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        cap: usize,
    ) -> Result<(Vec<SpendRow>, bool), StoreError> {
        let mut rows = vec![];
        let mut capped = false;
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                for row in layout::rows_of(item)? {
                    if rows.len() >= cap {
                        capped = true;
                        return Ok(false);
                    }
                    rows.push(row);
                }
            }
            Ok(true)
        })
        .await?;
        rows.sort_by(|a, b| (a.day_start, &a.ad_id).cmp(&(b.day_start, &b.ad_id)));
        Ok((rows, capped))
    }

    /// The strongly read query of an account's spend items between two day
    /// starts, inclusive.
    fn spend_query(
        &self,
        site: &str,
        account: &str,
        first_day: i64,
        last_day: i64,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(spend_pk(site, account)))
            .expression_attribute_values(":from", s(day_sk(first_day)))
            // `~` sorts after every digit, `!` and `#`: the whole last day
            // is included.
            .expression_attribute_values(":to", s(format!("{}~", day_sk(last_day))))
            .consistent_read(true)
    }

    /// Writes row changes under `cond`, with the day sums in step, in as few
    /// transactions as DynamoDB's 100-item cap allows (see [`layout`] for
    /// how a day's rows are packed). The days the changes touch are read
    /// again first: a row that no longer holds what its change was computed
    /// from (another execution of the run wrote it) refuses the whole write
    /// before anything is written, and each item is written on the version
    /// read, so two executions never add a day's delta twice. Stops, having
    /// written nothing more, at the first transaction that fails a
    /// condition, and says which.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn write_spend(
        &self,
        cond: &LeaseCondition,
        changes: &[RowChange],
    ) -> Result<SpendWrite, StoreError> {
        self.write_spend_ending(cond, changes, None).await
    }

    /// [`Spend::write_spend`], ending the run in its last transaction when
    /// `end` decides an ending from the link as the write reads it
    /// (strongly, with the lease): the link's update that checks the lease
    /// then also records the ending, and the run writes its link once.
    /// Answers [`SpendWrite::Ended`] when it did. A transaction that fails
    /// a condition answers as [`Spend::write_spend`] does, whether the
    /// lease's, a row's or the ending's (a sync asked for since the read):
    /// the caller writes again without the ending, and ends the run alone.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn write_spend_ending(
        &self,
        cond: &LeaseCondition,
        changes: &[RowChange],
        end: Option<EndWith<'_>>,
    ) -> Result<SpendWrite, StoreError> {
        let (Some(first), Some(last)) = (
            changes.iter().map(RowChange::day).min(),
            changes.iter().map(RowChange::day).max(),
        ) else {
            return Ok(SpendWrite::Written);
        };
        let (site, account) = (cond.site_id(), cond.ad_account_id());
        // Where each day's sum goes: a run's newest days are held on its
        // link ([`held`]), read strongly here with the lease.
        let (held_from, mut moves, ending) = match cond {
            LeaseCondition::Run { run_id, .. } => {
                let Some(link) = self
                    .read_item_as(site_pk(site), &link_sk(account), true)
                    .await?
                else {
                    return Ok(SpendWrite::LostLease);
                };
                if get_s(&link, "runId") != Some(run_id.as_str()) {
                    return Ok(SpendWrite::LostLease);
                }
                let held = held::held_of(&link);
                let written: Vec<i64> = changes.iter().map(RowChange::day).collect();
                let from = held::held_from(&held, &written);
                let moves: BTreeMap<i64, SpendFigures> =
                    held.range(..from).map(|(d, f)| (*d, *f)).collect();
                let ending = match end {
                    Some(decide) => decide(&SiteAdAccount::from_item(&link)?)
                        .map(|(update, seen)| lease::ending(site, account, &update, &seen)),
                    None => None,
                };
                (Some(from), moves, ending)
            }
            LeaseCondition::Unlinked { .. } => (None, BTreeMap::new(), None),
        };
        let mut days = BTreeMap::new();
        let query = self.spend_query(site, account, first, last);
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                layout::read_item(&mut days, item)?;
            }
            Ok(true)
        })
        .await?;
        let Some(units) = layout::plan(&spend_pk(site, account), days, changes) else {
            return Ok(SpendWrite::Stale);
        };
        let mut batch: Vec<layout::Unit> = vec![];
        // The lease's item, a sum item a day, the units' items, and (in the
        // first transaction) a sum item for each held day moved.
        let size = |batch: &[layout::Unit], moved: usize| {
            let days: std::collections::BTreeSet<i64> = batch.iter().map(|u| u.day()).collect();
            1 + moved + days.len() + batch.iter().map(layout::Unit::len).sum::<usize>()
        };
        for unit in units {
            let new_day = usize::from(!batch.iter().any(|u| u.day() == unit.day()));
            if !batch.is_empty()
                && size(&batch, moves.len()) + unit.len() + new_day > MAX_TRANSACTION_ITEMS
            {
                let taken = (std::mem::take(&mut batch), std::mem::take(&mut moves));
                let written = self.write_units(cond, taken, held_from, None).await?;
                if written != SpendWrite::Written {
                    return Ok(written);
                }
            }
            batch.push(unit);
        }
        if batch.is_empty() {
            return Ok(SpendWrite::Written);
        }
        let written = self
            .write_units(cond, (batch, moves), held_from, ending.as_ref())
            .await?;
        Ok(match written {
            SpendWrite::Written if ending.is_some() => SpendWrite::Ended,
            other => other,
        })
    }

    /// One transaction: the lease check, the units' writes, and each day's
    /// sum moved by its units' deltas: on the link for the days from
    /// `held_from` on (the link's update is then the lease's check), in
    /// the day's sum item for the others. Held days older than that are
    /// `moves`d to their sum items. With `end`, the link's update also
    /// ends the run.
    async fn write_units(
        &self,
        cond: &LeaseCondition,
        (units, moves): (Vec<layout::Unit>, BTreeMap<i64, SpendFigures>),
        held_from: Option<i64>,
        end: Option<&Ending>,
    ) -> Result<SpendWrite, StoreError> {
        let t = &self.names.table;
        let (site, account) = (cond.site_id(), cond.ad_account_id());
        let place = layout::Place {
            table: t,
            pk: spend_pk(site, account),
        };
        let mut deltas: BTreeMap<i64, SpendFigures> = BTreeMap::new();
        let mut writes = vec![];
        for unit in units {
            deltas.entry(unit.day()).or_default().add(unit.delta());
            writes.extend(unit.into_items(&place)?);
        }
        // Each sum item's one action: its day's delta, plus what a held
        // day moved to it brings.
        let mut sums: BTreeMap<i64, SpendFigures> = moves.clone();
        let mut change = held::LinkChange {
            adds: BTreeMap::new(),
            moves,
        };
        for (day, delta) in deltas {
            if delta.is_zero() {
                continue;
            }
            if held_from.is_some_and(|from| day >= from) {
                change.adds.insert(day, delta);
            } else {
                sums.entry(day).or_default().add(delta);
            }
        }
        let mut items = vec![match cond {
            LeaseCondition::Run { run_id, .. } if !change.is_empty() || end.is_some() => {
                change.update(t, (site, account), run_id, end)?
            }
            _ => cond.check(t)?,
        }];
        items.extend(writes);
        for (day, sum) in sums {
            if !sum.is_zero() {
                items.push(held::sum_add(t, (site, account), day, sum)?);
            }
        }
        Ok(match self.transact(items).await? {
            None => SpendWrite::Written,
            // The lease's item: the lease gone, or (the link's update pins
            // the held figures it moves) another execution moved them.
            Some(0) if self.holds_lease(cond).await? => SpendWrite::Stale,
            Some(0) => SpendWrite::LostLease,
            Some(_) => SpendWrite::Stale,
        })
    }

    /// Whether the run still holds its link, read strongly.
    async fn holds_lease(&self, cond: &LeaseCondition) -> Result<bool, StoreError> {
        let LeaseCondition::Run { run_id, .. } = cond else {
            return Ok(false);
        };
        let link = self
            .read_item_as(
                site_pk(cond.site_id()),
                &link_sk(cond.ad_account_id()),
                true,
            )
            .await?;
        Ok(link.as_ref().and_then(|l| get_s(l, "runId")) == Some(run_id.as_str()))
    }
}

/// How a run's ending is decided from its link as a spend write reads it:
/// the update and the schedule the run saw, or `None` to write without it.
pub type EndWith<'a> = &'a (dyn Fn(&SiteAdAccount) -> Option<(LinkUpdate, Seen)> + Send + Sync);

/// How a spend write ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendWrite {
    Written,
    /// Written, and the run ended with its last transaction.
    Ended,
    /// The run's lease is gone: nothing more was written.
    LostLease,
    /// A row no longer holds what the change was computed from (another
    /// execution of the run wrote it first): read again and recompute.
    Stale,
}
