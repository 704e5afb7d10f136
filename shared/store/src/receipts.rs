//! Receipts: what a sender counted before it wrote its ends on the rows.
//!
//! A send's end is two steps. First the counters move, in one transaction
//! with a receipt (`receipt#<siteId>` / `<leaseId>#<part>`) naming each row
//! they counted and how it ended; then each row is ended by a plain update,
//! conditional on the lease. A row ended inside the counters' transaction
//! costs two write units (a transaction bills each item twice); a plain
//! update costs one, and the receipt, one item for up to
//! [`ROWS_PER_RECEIPT`] rows, a small part of one.
//!
//! A sender that dies between the two leaves counted rows pending under a
//! lease that runs out. The next claim of such a row (the sweeper sends its
//! message again) reads the receipts of the lease it finds on the row and
//! ends the row as they say, counting nothing and sending nothing: each
//! row is counted once. The sender's timeout (60 seconds) is far below the
//! lease (15 minutes), so no claim takes a row over before its sender's
//! receipt is written. DynamoDB deletes a receipt a day after, through the
//! table's TTL, long after its lease ran out.
//!
//! A row posted on its own, and a lead's new row, was written `uncounted`
//! ([`crate::posted`], [`crate::outbox`]): the end of its first attempt,
//! whatever it is, counts it queued too, and its receipt says so (a retried
//! or released row's end is recorded as `queued`). Settling such an end
//! takes the flag off the row, so the next end does not count it queued
//! again. A claim reads the flag with the update that takes the row
//! ([`crate::sending`]), and nothing but the claim's holder takes it off
//! while the lease runs (the sweeper passes over a leased row): the end
//! counts the flag as it was.

use std::collections::HashMap;

use adtrail_domain::capi::{Conversion, SendEnd};
use adtrail_domain::destinations::slug_or_pixel;
use adtrail_domain::time::DAY_MS;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};

use crate::attr::{Item, get_n, n, s};
use crate::keys::{COUNT_SHARDS, PK, SK, conv_pk, receipt_pk, receipt_sk, shard_of};
use crate::outbox::TTL;
use crate::sending::Finish;
use crate::tally::Tally;
use crate::write::applied;
use crate::{Conversions, StoreError};

/// Rows a receipt names at most: about 8 KB of keys.
pub(crate) const ROWS_PER_RECEIPT: usize = 100;
/// How long a receipt is kept: far past the lease it answers for.
const RECEIPT_KEPT_MS: i64 = DAY_MS;

/// An end a receipt recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Receipted {
    Sent {
        at: i64,
    },
    Failed {
        last_error: String,
    },
    /// Counted queued only: the row stays pending.
    Queued,
}

/// A row's name on a receipt: its creation time and the first 24 hex
/// digits of its hash (96 bits), about half its key: a receipt costs
/// write units by its size, and rows of one lease never share both.
fn receipt_key(sk: &str) -> String {
    match sk.split_once('#') {
        Some((at, hash)) => format!("{at}#{}", crate::keys::prefix(hash, 24)),
        None => sk.to_owned(),
    }
}

/// Whether an end moves the counters (and so goes on a receipt): a retry
/// or a release leaves the row pending, counted already unless it is
/// `uncounted`.
pub(crate) fn counted(f: &Finish) -> bool {
    f.uncounted || matches!(f.end, SendEnd::Sent | SendEnd::Failed { .. })
}

/// The counters' moves for `ends` (`back`: taking them back).
fn tally_of(ends: &[&Finish], now: i64, back: bool) -> Tally {
    let mut tally = Tally::default();
    for f in ends {
        let slug = slug_or_pixel(f.destination.as_deref());
        if f.uncounted {
            tally.queued(slug, f.event_name, f.created_at, false);
        }
        match &f.end {
            SendEnd::Sent => tally.sent(slug, f.event_name, now),
            SendEnd::Failed { .. } => tally.failed(slug, f.event_name, now),
            SendEnd::Retry { .. } | SendEnd::Released => {}
        }
    }
    if back { tally.negated() } else { tally }
}

impl Conversions<'_> {
    /// Moves the counters for `ends` (all of one site) and writes their
    /// receipt, part `part` of `lease_id`'s, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails: nothing was counted.
    pub(crate) async fn count_ends(
        &self,
        site: &str,
        lease_id: &str,
        part: usize,
        ends: &[&Finish],
        now: i64,
    ) -> Result<(), StoreError> {
        let t = &self.names.table;
        let mut recorded = HashMap::new();
        let mut errors = HashMap::new();
        for f in ends {
            let kind = match &f.end {
                SendEnd::Failed { last_error } => {
                    errors.insert(receipt_key(&f.sk), s(last_error));
                    "failed"
                }
                SendEnd::Sent => "sent",
                SendEnd::Retry { .. } | SendEnd::Released => "queued",
            };
            recorded.insert(receipt_key(&f.sk), s(kind));
        }
        let mut receipt = Put::builder()
            .table_name(t)
            .item(PK, s(receipt_pk(site)))
            .item(SK, s(receipt_sk(lease_id, part)))
            .item("ends", AttributeValue::M(recorded))
            .item("at", n(now))
            .item(TTL, n((now + RECEIPT_KEPT_MS) / 1_000))
            .condition_expression("attribute_not_exists(pk)");
        if !errors.is_empty() {
            receipt = receipt.item("errors", AttributeValue::M(errors));
        }
        let shard = shard_of(&ends[0].event_id, COUNT_SHARDS);
        let mut items = vec![
            TransactWriteItem::builder()
                .put(receipt.build().map_err(StoreError::ddb)?)
                .build(),
        ];
        items.extend(tally_of(ends, now, false).updates(t, site, shard)?);
        // A receipt already there is this very part written before (its
        // answer lost on the way): counted already.
        self.transact(items).await.map(|_| ())
    }

    /// Takes back the counting of `ends` whose rows were not ended after
    /// all (the row was removed, or another attempt owns it and counts it
    /// itself).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn uncount_ends(
        &self,
        site: &str,
        ends: &[&Finish],
        now: i64,
    ) -> Result<(), StoreError> {
        let t = &self.names.table;
        let shard = shard_of(&ends[0].event_id, COUNT_SHARDS);
        let items = tally_of(ends, now, true).updates(t, site, shard)?;
        self.transact(items).await.map(|_| ())
    }

    /// Ends `c`, a pending row whose lease `lease_id` ran out, as that
    /// lease's receipt says, if it names the row. Answers whether it did
    /// (a row counted queued only stays pending, its flag taken off).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn settle_one(
        &self,
        c: &mut Conversion,
        lease_id: &str,
    ) -> Result<bool, StoreError> {
        self.settle_taken(c, lease_id, lease_id).await
    }

    /// [`Self::settle_one`] for a row held under `lease_id`: the receipt
    /// read is the attempt `before`'s (the same lease, run out, or the one
    /// a claim just took the row over from).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn settle_taken(
        &self,
        c: &mut Conversion,
        before: &str,
        lease_id: &str,
    ) -> Result<bool, StoreError> {
        let ends = self.receipted(&c.site_id, before).await?;
        self.settle_from(c, &ends, lease_id).await
    }

    /// [`Self::settle_taken`] with the receipts of the attempt before
    /// already read (`ends`, [`Self::receipted`]'s).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn settle_from(
        &self,
        c: &mut Conversion,
        ends: &HashMap<String, Receipted>,
        lease_id: &str,
    ) -> Result<bool, StoreError> {
        let Some(end) = ends.get(&receipt_key(&c.sk)) else {
            return Ok(false);
        };
        self.settle(c, end, lease_id).await
    }

    /// Writes on `c`, held under `lease_id`, the end a receipt recorded:
    /// answers whether the row ended. One counted queued only loses its
    /// flag, and `c` with it.
    async fn settle(
        &self,
        c: &mut Conversion,
        end: &Receipted,
        lease_id: &str,
    ) -> Result<bool, StoreError> {
        let (end, at) = match end {
            Receipted::Sent { at } => (SendEnd::Sent, *at),
            Receipted::Failed { last_error } => (
                SendEnd::Failed {
                    last_error: last_error.clone(),
                },
                0,
            ),
            Receipted::Queued => {
                let update = self
                    .update_item(conv_pk(&c.site_id), &c.sk)
                    .update_expression("REMOVE uncounted")
                    .condition_expression("leaseId = :lease AND attribute_exists(uncounted)")
                    .expression_attribute_values(":lease", s(lease_id))
                    .send()
                    .await;
                if applied(update)?.is_some() {
                    c.uncounted = false;
                }
                return Ok(false);
            }
        };
        self.end_row(&c.site_id, lease_id, &Finish::of(c, end), at)
            .await
    }

    /// The ends `lease_id`'s receipts recorded for `site`'s rows, by
    /// [`receipt_key`].
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn receipted(
        &self,
        site: &str,
        lease_id: &str,
    ) -> Result<HashMap<String, Receipted>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :lease)")
            .expression_attribute_values(":pk", s(receipt_pk(site)))
            .expression_attribute_values(":lease", s(format!("{lease_id}#")))
            .consistent_read(true);
        let mut found = HashMap::new();
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                found.extend(ends_of(item));
            }
            Ok(true)
        })
        .await?;
        Ok(found)
    }
}

/// A receipt's ends, by [`receipt_key`].
fn ends_of(item: &Item) -> Vec<(String, Receipted)> {
    let at = get_n(item, "at").unwrap_or_default();
    let map = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_m().ok())
            .cloned()
            .unwrap_or_default()
    };
    let errors = map("errors");
    map("ends")
        .into_iter()
        .filter_map(|(sk, kind)| {
            let end = match kind.as_s().ok()?.as_str() {
                "sent" => Receipted::Sent { at },
                "queued" => Receipted::Queued,
                "failed" => Receipted::Failed {
                    last_error: errors
                        .get(&sk)
                        .and_then(|e| e.as_s().ok())
                        .cloned()
                        .unwrap_or_default(),
                },
                _ => return None,
            };
            Some((sk, end))
        })
        .collect()
}
