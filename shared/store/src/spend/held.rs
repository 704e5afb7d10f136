//! The sums of an account's two newest days, held on its link item rather
//! than in sum items.
//!
//! Every spend transaction of a run must check the run's lease, and
//! DynamoDB bills that check as a write of the link (2 units in a
//! transaction). A live run rewrites today (and, past midnight, yesterday)
//! every interval, and each rewrite also moved the day's sum item (2 more).
//! Holding those days' sums on the link lets one update of the link be both
//! the lease's check and the sums' change: a live run writes 2 units fewer.
//!
//! Each held day is three numbers, `s@<dayStart>`, `i@<dayStart>` and
//! `c@<dayStart>` (spend, impressions, clicks), moved with `ADD`, so two
//! executions of one run compose like the sum items did (the chunk
//! versions in the same transaction keep a delta from landing twice). Only
//! the newest day written and the one before it are held: when a newer day
//! is written, older held days move to their sum items in the same
//! transaction, on the figures read (the update's condition), so nothing
//! moves twice or is lost. An unlink moves them the same way before the
//! link goes.
//!
//! A day's sum is its sum item's figures plus its held figures: a day may
//! have both (held again after a link was made anew over rows left by the
//! last one), and adding the two is always right.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};

use adtrail_domain::spend::SpendFigures;
use adtrail_domain::time::DAY_MS;

use crate::StoreError;
use crate::attr::{Item, n, s};
use crate::keys::{PK, SK, day_sk, link_sk, site_pk, sum_pk};
use crate::lease::Ending;

/// The held figures' attribute names of a day: spend, impressions, clicks.
fn names(day: i64) -> [String; 3] {
    ["s", "i", "c"].map(|k| format!("{k}@{day}"))
}

/// The days a link item holds, with their figures.
pub(crate) fn held_of(item: &Item) -> BTreeMap<i64, SpendFigures> {
    let mut held: BTreeMap<i64, SpendFigures> = BTreeMap::new();
    for (name, value) in item {
        let Some((kind, day)) = name.split_once('@') else {
            continue;
        };
        let (Ok(day), AttributeValue::N(v)) = (day.parse::<i64>(), value) else {
            continue;
        };
        let Ok(v) = v.parse::<i64>() else { continue };
        if !matches!(kind, "s" | "i" | "c") {
            continue;
        }
        let f = held.entry(day).or_default();
        match kind {
            "s" => f.spend_cents = v,
            "i" => f.impressions = v,
            _ => f.clicks = v,
        }
    }
    held
}

/// Where each day's sum goes in a write: the first day held on the link.
/// The newest day written or held, and the one before it, are held.
pub(crate) fn held_from(held: &BTreeMap<i64, SpendFigures>, written: &[i64]) -> i64 {
    let newest = held
        .keys()
        .chain(written.iter())
        .copied()
        .max()
        .unwrap_or(i64::MIN + DAY_MS);
    newest - DAY_MS
}

/// What one transaction does to the link beside its lease check: the
/// deltas it adds to held days, and the held days it moves to their sum
/// items (with the figures read, which the update's condition pins).
#[derive(Debug, Default)]
pub(crate) struct LinkChange {
    pub(crate) adds: BTreeMap<i64, SpendFigures>,
    pub(crate) moves: BTreeMap<i64, SpendFigures>,
}

impl LinkChange {
    pub(crate) fn is_empty(&self) -> bool {
        self.adds.is_empty() && self.moves.is_empty()
    }

    /// The link's update, conditioned on the run's lease (`runId`) and on
    /// each moved day's figures as read, with the run's `end` when this
    /// transaction also ends the run. The moved figures' `ADD` to their
    /// sum items is the caller's, in the same transaction (one action an
    /// item: a moved day may also change in it).
    pub(crate) fn update(
        &self,
        table: &str,
        (site, account): (&str, &str),
        run_id: &str,
        end: Option<&Ending>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut e = Exprs::default();
        e.values.insert(":run".to_owned(), s(run_id));
        let mut add = vec![];
        for (day, delta) in &self.adds {
            for (attr, v) in names(*day).iter().zip(values(delta)) {
                let (name, value) = e.put(attr, v);
                add.push(format!("{name} {value}"));
            }
        }
        let (mut condition, mut remove) = e.pin(&self.moves);
        let mut expression = vec![];
        if let Some(end) = end {
            // The ending's placeholders are named words (`:state`, …), the
            // held days' numbered (`:h1`, …): the two never meet.
            expression.push(format!("SET {}", end.set.join(", ")));
            remove.extend(end.remove.iter().map(|r| (*r).to_owned()));
            condition.extend(end.condition.iter().map(|c| (*c).to_owned()));
            e.values
                .extend(end.values.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        if !add.is_empty() {
            expression.push(format!("ADD {}", add.join(", ")));
        }
        if !remove.is_empty() {
            expression.push(format!("REMOVE {}", remove.join(", ")));
        }
        let update = Update::builder()
            .table_name(table)
            .key(PK, s(site_pk(site)))
            .key(SK, s(link_sk(account)))
            .update_expression(expression.join(" "))
            .condition_expression(
                std::iter::once("runId = :run".to_owned())
                    .chain(condition)
                    .collect::<Vec<_>>()
                    .join(" AND "),
            )
            // DynamoDB refuses an empty map: an ending alone names nothing.
            .set_expression_attribute_names((!e.names.is_empty()).then_some(e.names))
            .set_expression_attribute_values(Some(e.values))
            .build()
            .map_err(StoreError::ddb)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}

/// Expression placeholders, `#h<i>` for a held attribute and `:h<i>` for
/// its value.
#[derive(Default)]
pub(crate) struct Exprs {
    i: usize,
    pub(crate) names: HashMap<String, String>,
    pub(crate) values: Item,
}

impl Exprs {
    fn put(&mut self, attr: &str, v: i64) -> (String, String) {
        self.i += 1;
        let (name, value) = (format!("#h{}", self.i), format!(":h{}", self.i));
        self.names.insert(name.clone(), attr.to_owned());
        self.values.insert(value.clone(), n(v));
        (name, value)
    }

    /// Pins each day's held figures as read: the conditions
    /// (`#h1 = :h1`, …) and the attributes' placeholders (to remove).
    pub(crate) fn pin(&mut self, days: &BTreeMap<i64, SpendFigures>) -> (Vec<String>, Vec<String>) {
        let (mut condition, mut attrs) = (vec![], vec![]);
        for (day, read) in days {
            for (attr, v) in names(*day).iter().zip(values(read)) {
                let (name, value) = self.put(attr, v);
                // A zero read may be a figure never added.
                condition.push(if v == 0 {
                    format!("(attribute_not_exists({name}) OR {name} = {value})")
                } else {
                    format!("{name} = {value}")
                });
                attrs.push(name);
            }
        }
        (condition, attrs)
    }
}

fn values(f: &SpendFigures) -> [i64; 3] {
    [f.spend_cents, f.impressions, f.clicks]
}

/// A day's sum item moved by `delta`.
pub(crate) fn sum_add(
    table: &str,
    (site, account): (&str, &str),
    day: i64,
    delta: SpendFigures,
) -> Result<TransactWriteItem, StoreError> {
    let update = Update::builder()
        .table_name(table)
        .key(PK, s(sum_pk(site, account)))
        .key(SK, s(day_sk(day)))
        .update_expression("ADD spendCents :s, impressions :i, clicks :c")
        .expression_attribute_values(":s", n(delta.spend_cents))
        .expression_attribute_values(":i", n(delta.impressions))
        .expression_attribute_values(":c", n(delta.clicks))
        .build()
        .map_err(StoreError::ddb)?;
    Ok(TransactWriteItem::builder().update(update).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_item_reads_back_the_days_it_holds_and_nothing_else() {
        let item: Item = [
            ("pk".to_owned(), s("site#a")),
            ("s@86400000".to_owned(), n(120)),
            ("i@86400000".to_owned(), n(1_000)),
            ("c@86400000".to_owned(), n(7)),
            ("s@172800000".to_owned(), n(5)),
            ("ownerKey".to_owned(), s("x@y")),
            ("s@notaday".to_owned(), n(1)),
        ]
        .into();
        let held = held_of(&item);
        assert_eq!(held.len(), 2);
        assert_eq!(
            held[&86_400_000],
            SpendFigures {
                spend_cents: 120,
                impressions: 1_000,
                clicks: 7
            }
        );
        assert_eq!(held[&172_800_000].spend_cents, 5);
    }

    #[test]
    fn the_newest_day_and_the_one_before_are_held() {
        let held: BTreeMap<i64, SpendFigures> = [(5 * DAY_MS, SpendFigures::default())].into();
        assert_eq!(held_from(&held, &[2 * DAY_MS, 3 * DAY_MS]), 4 * DAY_MS);
        assert_eq!(held_from(&held, &[6 * DAY_MS]), 5 * DAY_MS);
        assert_eq!(held_from(&BTreeMap::new(), &[9 * DAY_MS]), 8 * DAY_MS);
    }
}
