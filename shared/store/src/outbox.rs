//! The outbox: a lead change, the marker that makes its `changeId` seen,
//! the column entry it counts for, the cohort counters it moves and the
//! conversions it queues are one `TransactWriteItems`, so a conversion
//! exists exactly when the change that caused it does (the message to the
//! send queue follows). New conversions are put `uncounted`, as a posted
//! event's row on its own is: the site's conversion counters count them
//! from the end of their first attempt (`crate::receipts`), seconds later.
//! The lead's `version` makes each write conditional on what the change
//! was decided from. Removing a lead is one transaction too.

use adtrail_domain::capi::{Conversion, ConversionStatus, parse_conversion_ref};
use adtrail_domain::leads::{ENTRY_KEPT_MS, Lead, LeadWrite};
use adtrail_domain::metrics::Counters;
use adtrail_domain::time::DAY_MS;
use adtrail_domain::time::utc_day;
use aws_sdk_dynamodb::types::{
    Delete, DeleteRequest, Put, TransactWriteItem, Update, WriteRequest,
};

use crate::attr::{Item, n, s};
use crate::items::{ConversionItem, encode, uncounted_as};
use crate::keys::{
    COUNT_SHARDS, PK, RollupDim, SK, change_pk, conv_pk, entry_pk, entry_sk, lead_ad_pk, lead_pk,
    rollup_pk, rollup_sk, send_shard, shard_of,
};
use crate::tally::Tally;
use crate::{Leads, StoreError};
use adtrail_domain::destinations::PIXEL_SLUG;
use adtrail_domain::destinations::slug_or_pixel;

use crate::leads::lead_item;

/// The dimensions a lead counts in: its origin, its ad if it has one, its
/// form if it came from one.
fn dims(lead: &Lead) -> Vec<String> {
    let mut dims = vec![RollupDim::Origin(lead.origin.clone())];
    if let Some(ad) = &lead.ad_id {
        dims.push(RollupDim::Ad(ad.clone()));
    }
    if let Some(form) = &lead.form_id {
        dims.push(RollupDim::Form(form.clone()));
    }
    dims.iter().map(RollupDim::key).collect()
}

/// `ADD`s of a counters delta to the lead's cohort rollups.
fn rollup_updates(
    table: &str,
    lead: &Lead,
    delta: &Counters,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    if delta.is_zero() {
        return Ok(vec![]);
    }
    dims(lead)
        .into_iter()
        .map(|dim| {
            let update = Update::builder()
                .table_name(table)
                .key(PK, s(rollup_pk(&lead.site_id)))
                .key(SK, s(rollup_sk(lead.cohort_day, &dim)))
                .update_expression(
                    "SET dayStart = :day, dim = :dim ADD leads :l, qualified :q, won :w, revenueCents :r",
                )
                .expression_attribute_values(":day", n(lead.cohort_day))
                .expression_attribute_values(":dim", s(&dim))
                .expression_attribute_values(":l", n(delta.leads))
                .expression_attribute_values(":q", n(delta.qualified))
                .expression_attribute_values(":w", n(delta.won))
                .expression_attribute_values(":r", n(delta.revenue_cents))
                .build()
                .map_err(StoreError::ddb)?;
            Ok(TransactWriteItem::builder().update(update).build())
        })
        .collect()
}

/// DynamoDB's time-to-live attribute (epoch seconds): items past it are
/// deleted by DynamoDB in the background.
pub const TTL: &str = "ttl";

/// How long a change stays seen: a retry months later is not a retry.
pub const CHANGE_KEPT_MS: i64 = 180 * DAY_MS;

/// How a lead write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeadWritten {
    Written,
    /// The `changeId` was seen before: nothing changed.
    ChangeSeen,
    /// The lead or one of its conversions changed since it was read: read
    /// again and decide again.
    Raced,
}

fn tx_put(
    table: &str,
    item: Item,
    condition: Option<&str>,
) -> Result<TransactWriteItem, StoreError> {
    let mut put = Put::builder().table_name(table).set_item(Some(item));
    if let Some(c) = condition {
        put = put.condition_expression(c);
    }
    Ok(TransactWriteItem::builder()
        .put(put.build().map_err(StoreError::ddb)?)
        .build())
}

// A change's transaction: its marker, the lead, its ad, its column entry,
// three pixel rows, a row per destination for each of its three events at
// most, three cohort rollups and two counter items: within DynamoDB's 100.
const _: () = assert!(12 + 3 * adtrail_domain::destinations::MAX_LIVE_DESTINATIONS <= 100);

/// The rows a lead's removal deletes in one transaction. Each row may move
/// its own day's counter item (a sent row leaves the day it was sent on),
/// so a transaction holds up to 45 rows, 45 day items, the totals, the lead
/// and its three cohort rollups: under DynamoDB's 100 items.
const ROWS_PER_REMOVAL: usize = 45;

/// Deletes of a lead's rows, each only in the status it was read in; their
/// counts leave `tally`.
fn row_deletes(
    t: &str,
    site: &str,
    rows: &[Conversion],
    tally: &mut Tally,
) -> Result<Vec<TransactWriteItem>, StoreError> {
    rows.iter()
        .map(|c| {
            tally.removed(slug_or_pixel(c.destination.as_deref()), c);
            let delete = Delete::builder()
                .table_name(t)
                .key(PK, s(conv_pk(site)))
                .key(SK, s(&c.sk))
                // In the status, counted or not, it was read in.
                .condition_expression(format!("#status = :s AND {}", uncounted_as(c.uncounted)))
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":s", s(c.status.as_str()))
                .build()
                .map_err(StoreError::ddb)?;
            Ok(TransactWriteItem::builder().delete(delete).build())
        })
        .collect()
}

/// The conversions a change queues, each a conditional put (a new row, or
/// a failed one opened again), and its rows for the site's destinations
/// (new ones only: the lead records each, and its version guards them, so
/// they need no marker of their own).
fn conversion_puts(t: &str, w: &LeadWrite) -> Result<Vec<TransactWriteItem>, StoreError> {
    let mut items = vec![];
    for c in &w.conversions {
        let created_at = parse_conversion_ref(&c.sk).map_or(w.now, |(at, _)| at);
        let keys = (
            conv_pk(&w.lead.site_id),
            created_at,
            Some(send_shard(&c.event_id)),
        );
        let mut item = ConversionItem::pending(c, &w.lead, keys, w.now);
        // A failed row opened again was counted: the change moves it from
        // failed to pending. A new one is counted by its first end.
        item.uncounted = c.reopens.is_none();
        let item = encode(&item, "conversion")?;
        let mut put = Put::builder().table_name(t).set_item(Some(item));
        put = match c.reopens {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(_) => put
                .condition_expression("#status = :failed")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":failed", s(ConversionStatus::Failed.as_str())),
        };
        items.push(
            TransactWriteItem::builder()
                .put(put.build().map_err(StoreError::ddb)?)
                .build(),
        );
    }
    for r in &w.routed {
        let keys = (conv_pk(&w.lead.site_id), w.now, Some(send_shard(&r.sk)));
        let mut item = ConversionItem::posted(r, &w.lead.site_id, keys, w.now);
        item.uncounted = true;
        let item = encode(&item, "conversion")?;
        items.push(tx_put(t, item, Some("attribute_not_exists(pk)"))?);
    }
    Ok(items)
}

impl Leads<'_> {
    /// Writes a lead change with its outbox rows, all or nothing.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn write_lead_change(&self, w: &LeadWrite) -> Result<LeadWritten, StoreError> {
        let t = &self.names.table;
        let site = &w.lead.site_id;
        let mut items = vec![];
        // 0: the change marker. Its failure means a duplicate.
        let marker: Item = [
            (PK.to_owned(), s(change_pk(site))),
            (SK.to_owned(), s(&w.change_id)),
            ("leadKey".to_owned(), s(&w.lead.lead_key)),
            ("at".to_owned(), n(w.now)),
            (TTL.to_owned(), n((w.now + CHANGE_KEPT_MS) / 1_000)),
        ]
        .into();
        items.push(tx_put(t, marker, Some("attribute_not_exists(pk)"))?);
        // 1: the lead, over the version it was read at.
        let lead_item = lead_item(&w.lead, w.now)?;
        let lead_put = if w.lead.version == 0 {
            Put::builder()
                .table_name(t)
                .set_item(Some(lead_item))
                .condition_expression("attribute_not_exists(pk)")
        } else {
            Put::builder()
                .table_name(t)
                .set_item(Some(lead_item))
                .condition_expression("version = :v")
                .expression_attribute_values(":v", n(w.lead.version))
        };
        items.push(
            TransactWriteItem::builder()
                .put(lead_put.build().map_err(StoreError::ddb)?)
                .build(),
        );
        // A new paid lead tells the sync which ad to name.
        if let (0, Some(ad)) = (w.lead.version, &w.lead.ad_id) {
            let item: Item = [
                (PK.to_owned(), s(lead_ad_pk(site))),
                (SK.to_owned(), s(ad)),
                ("lastLeadAt".to_owned(), n(w.lead.created_at)),
            ]
            .into();
            items.push(tx_put(t, item, None)?);
        }
        if let Some(column) = &w.entered {
            let entry: Item = [
                (PK.to_owned(), s(entry_pk(site, column))),
                (SK.to_owned(), s(entry_sk(utc_day(w.now), &w.lead.lead_id))),
                ("leadId".to_owned(), s(&w.lead.lead_id)),
                (TTL.to_owned(), n((utc_day(w.now) + ENTRY_KEPT_MS) / 1_000)),
            ]
            .into();
            items.push(tx_put(t, entry, None)?);
        }
        items.extend(conversion_puts(t, w)?);
        items.extend(rollup_updates(t, &w.lead, &w.rollup)?);
        // New rows are put uncounted: the end of each one's first attempt
        // counts it queued, in the counter transaction its sender writes
        // once a batch (`crate::receipts`), so a change that only queues
        // moves no counter item (two in this transaction: four write
        // units). A failed row opened again (the pixel's) was counted: it
        // moves from failed to pending here.
        let mut tally = Tally::default();
        for c in w.conversions.iter().filter(|c| c.reopens.is_some()) {
            tally.queued(PIXEL_SLUG, c.event_name, w.now, true);
        }
        items.extend(tally.updates(t, site, shard_of(&w.change_id, COUNT_SHARDS))?);
        Ok(match self.transact(items).await? {
            None => LeadWritten::Written,
            Some(0) => LeadWritten::ChangeSeen,
            Some(_) => LeadWritten::Raced,
        })
    }

    /// Removes a lead with its conversions and column entries; their
    /// counts leave the counters. Answers `Raced` when a conversion or the
    /// lead changed since they were read (read again), `ChangeSeen` when
    /// the lead is already gone.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn delete_lead(&self, lead: &Lead) -> Result<LeadWritten, StoreError> {
        let t = &self.names.table;
        let site = &lead.site_id;
        let sks = lead.row_refs();
        let conversions = self.conversions().get_conversions(site, &sks).await?;
        let shard = shard_of(&lead.lead_id, COUNT_SHARDS);
        // A lead with rows for many destinations can pass one
        // transaction's items: the first rows go in transactions of their
        // own (each row once: its delete is conditional on its status).
        let (early, last) =
            conversions.split_at(conversions.len().saturating_sub(ROWS_PER_REMOVAL));
        for chunk in early.chunks(ROWS_PER_REMOVAL) {
            let mut tally = Tally::default();
            let mut items = row_deletes(t, site, chunk, &mut tally)?;
            items.extend(tally.updates(t, site, shard)?);
            if self.transact(items).await?.is_some() {
                return Ok(LeadWritten::Raced);
            }
        }
        let mut items = vec![
            TransactWriteItem::builder()
                .delete(
                    Delete::builder()
                        .table_name(t)
                        .key(PK, s(lead_pk(site)))
                        .key(SK, s(&lead.lead_key))
                        .condition_expression("version = :v")
                        .expression_attribute_values(":v", n(lead.version))
                        .build()
                        .map_err(StoreError::ddb)?,
                )
                .build(),
        ];
        let mut tally = Tally::default();
        items.extend(row_deletes(t, site, last, &mut tally)?);
        let gone = Counters::delta(
            Some(Counters::of_lead(lead.stage, lead.revenue_cents)),
            None,
        );
        items.extend(rollup_updates(t, lead, &gone)?);
        items.extend(tally.updates(t, site, shard)?);
        if self.transact(items).await?.is_some() {
            return Ok(LeadWritten::Raced);
        }
        // Entries only count inside 30 days: one this cleanup misses (a
        // crash here) ages out of every count by itself.
        for chunk in lead.entries.chunks(25) {
            let requests = chunk
                .iter()
                .map(|(column, day)| {
                    let delete = DeleteRequest::builder()
                        .key(PK, s(entry_pk(site, column)))
                        .key(SK, s(entry_sk(*day, &lead.lead_id)))
                        .build()
                        .map_err(StoreError::ddb)?;
                    Ok(WriteRequest::builder().delete_request(delete).build())
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            self.batch_write(t, requests).await?;
        }
        Ok(LeadWritten::Written)
    }
}
