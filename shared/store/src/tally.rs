//! The conversion counters' moves: one `ADD` per counter item a
//! transaction touches, the site's and each destination's together.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};
use adtrail_domain::time::utc_day;
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use crate::StoreError;
use crate::attr::{n, s};
use crate::keys::{COUNT_TOTAL_SK, PK, SK, count_day_sk, count_pk};

/// An `ADD` to one counter item (`day`: a day item, else the totals).
pub(crate) fn counter_update(
    table: &str,
    site: &str,
    shard: u32,
    deltas: &[(String, i64)],
    day: Option<i64>,
) -> Result<TransactWriteItem, StoreError> {
    let mut update = Update::builder()
        .table_name(table)
        .key(PK, s(count_pk(site, shard)))
        .key(
            SK,
            s(day.map_or_else(|| COUNT_TOTAL_SK.to_owned(), count_day_sk)),
        );
    let mut parts = vec![];
    for (i, (name, delta)) in deltas.iter().enumerate() {
        parts.push(format!("#c{i} :c{i}"));
        update = update
            .expression_attribute_names(format!("#c{i}"), name)
            .expression_attribute_values(format!(":c{i}"), n(*delta));
    }
    Ok(TransactWriteItem::builder()
        .update(
            update
                .update_expression(format!("ADD {}", parts.join(", ")))
                .build()
                .map_err(StoreError::ddb)?,
        )
        .build())
}

/// Moves of a site's conversion counters within one transaction: the
/// site's totals (`pending`, `sent`, `failed`) and its UTC days (events
/// sent, by name), and beside them each destination's own (`<slug>|pending`
/// … on the totals, `<slug>|queued|<Event>`, `…|sent|…`, `…|failed|…` on
/// the days; the pixel is `meta`), so a destination's metrics and status
/// read the same few items as the site's, never a scan.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    totals: BTreeMap<String, i64>,
    days: BTreeMap<i64, BTreeMap<String, i64>>,
}

impl Tally {
    fn total(&mut self, name: String, delta: i64) {
        *self.totals.entry(name).or_default() += delta;
    }
    fn day(&mut self, day: i64, name: String, delta: i64) {
        *self.days.entry(day).or_default().entry(name).or_default() += delta;
    }
    /// A row queued (`reopened`: a failed row pending again).
    pub(crate) fn queued(&mut self, slug: &str, event: EventName, now: i64, reopened: bool) {
        self.total("pending".into(), 1);
        self.total(format!("{slug}|pending"), 1);
        if reopened {
            self.total("failed".into(), -1);
            self.total(format!("{slug}|failed"), -1);
        }
        self.day(utc_day(now), format!("{slug}|queued|{}", event.as_str()), 1);
    }
    /// A pending row sent.
    pub(crate) fn sent(&mut self, slug: &str, event: EventName, now: i64) {
        self.total("pending".into(), -1);
        self.total("sent".into(), 1);
        self.total(format!("{slug}|pending"), -1);
        self.total(format!("{slug}|sent"), 1);
        self.day(utc_day(now), event.as_str().to_owned(), 1);
        self.day(utc_day(now), format!("{slug}|sent|{}", event.as_str()), 1);
    }
    /// A pending row failed for good.
    pub(crate) fn failed(&mut self, slug: &str, event: EventName, now: i64) {
        self.total("pending".into(), -1);
        self.total("failed".into(), 1);
        self.total(format!("{slug}|pending"), -1);
        self.total(format!("{slug}|failed"), 1);
        self.day(utc_day(now), format!("{slug}|failed|{}", event.as_str()), 1);
    }
    /// A row removed with its lead: it leaves the totals (and, sent, its
    /// day) if it was counted; a destination's daily history keeps what
    /// happened.
    pub(crate) fn removed(&mut self, slug: &str, c: &Conversion) {
        if c.uncounted {
            // Never counted: nothing to take back.
            return;
        }
        self.total(c.status.as_str().to_owned(), -1);
        self.total(format!("{slug}|{}", c.status.as_str()), -1);
        if let (ConversionStatus::Sent, Some(at)) = (c.status, c.sent_at) {
            self.day(utc_day(at), c.event_name.as_str().to_owned(), -1);
        }
    }

    /// The same moves the other way: what takes them back.
    pub(crate) fn negated(mut self) -> Self {
        self.totals.values_mut().for_each(|v| *v = -*v);
        for day in self.days.values_mut() {
            day.values_mut().for_each(|v| *v = -*v);
        }
        self
    }

    /// The counter items' `ADD`s, on `shard`.
    pub(crate) fn updates(
        &self,
        table: &str,
        site: &str,
        shard: u32,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let mut items = vec![];
        let nonzero = |m: &BTreeMap<String, i64>| -> Vec<(String, i64)> {
            m.iter()
                .filter(|(_, d)| **d != 0)
                .map(|(k, d)| (k.clone(), *d))
                .collect()
        };
        let totals = nonzero(&self.totals);
        if !totals.is_empty() {
            items.push(counter_update(table, site, shard, &totals, None)?);
        }
        for (day, deltas) in &self.days {
            let deltas = nonzero(deltas);
            if !deltas.is_empty() {
                items.push(counter_update(table, site, shard, &deltas, Some(*day))?);
            }
        }
        Ok(items)
    }
}
