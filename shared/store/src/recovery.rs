//! Sends lost on the way: the sweeper finds pending rows whose attempt was
//! due long ago and either puts them back in line (counting the lost
//! attempt) or fails them by the domain's rule.
//!
//! A row has its own `work` entry, or a send batch stands for it (a posted
//! batch's rows, [`crate::posted`]): the sweeper reads a late batch's rows
//! (those of its site created in its millisecond), deals with each lost
//! one as with a row of its own, and then deletes the batch when none is
//! pending or moves it on to look again.

use adtrail_domain::capi::{Conversion, ConversionStatus, doomed};
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use crate::attr::{FromItem, Item, get_n, get_s, n, s};
use crate::items::{MATCH_ATTRIBUTES, uncounted_as};
use crate::keys::{
    COUNT_SHARDS, PK, SK, WORK_AT, WORK_INDEX, WORK_SHARD, conv_pk, parse_conv_pk,
    parse_send_batch_pk, send_batch_member, send_batch_pk, send_shard_n, shard_of,
};
use crate::write::applied;
use crate::{Conversions, StoreError};

use crate::tally::Tally;
use adtrail_domain::destinations::slug_or_pixel;

/// What the sweeper did with a pending row found late.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// Sent again (the lost attempt counted when no sender had taken it).
    Requeued,
    /// Out of attempts or older than 7 days: failed.
    Failed,
    /// Moved on meanwhile.
    Skipped,
    /// Its sender counted its end and stopped before writing it on the
    /// row: ended now as the sender's receipt says ([`crate::receipts`]).
    Settled,
}

/// A late entry of the `work` index's send shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Late {
    /// A pending row with an entry of its own: its site and key.
    Row(String, String),
    /// A send batch standing for its rows: its site and key (the
    /// creation time its rows' keys start with).
    Batch(String, String),
}

/// Pages of a batch's rows read at most: a millisecond's rows of one site
/// are at most a request's hundred events for each destination.
const BATCH_PAGES: usize = 16;

/// Where the next page of [`Conversions::late_sends`] starts: rows a
/// sender still holds stay at the head of the index, so the next page must
/// start past them rather than at the head again.
#[derive(Debug, Clone)]
pub struct LateCursor(Item);

impl Conversions<'_> {
    /// Pending rows and send batches of one shard whose attempt was due
    /// before `before`, oldest first, at most `limit`, from `after` on;
    /// answers them and where the next page starts (`None`: no more).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn late_sends(
        &self,
        shard: u32,
        before: i64,
        limit: i32,
        after: Option<LateCursor>,
    ) -> Result<(Vec<Late>, Option<LateCursor>), StoreError> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(WORK_INDEX)
            .key_condition_expression("workShard = :shard AND workAt < :before")
            .expression_attribute_values(":shard", s(send_shard_n(shard)))
            .expression_attribute_values(":before", n(before))
            .limit(limit)
            .set_exclusive_start_key(after.map(|c| c.0))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        let rows = out
            .items()
            .iter()
            .filter_map(|item| {
                let (pk, sk) = (get_s(item, PK)?, get_s(item, SK)?.to_owned());
                match (parse_conv_pk(pk), parse_send_batch_pk(pk)) {
                    (Some(site), _) => Some(Late::Row(site.to_owned(), sk)),
                    (_, Some(site)) => Some(Late::Batch(site.to_owned(), sk)),
                    _ => None,
                }
            })
            .collect();
        Ok((rows, out.last_evaluated_key.map(LateCursor)))
    }

    /// Deals with a pending row found late: a send lost on the way. With no
    /// sender holding it, the lost attempt is counted; out of attempts or
    /// past the 7-day cap it fails, else it is due again now (the caller
    /// then puts its message on the queue).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn recover_lost(
        &self,
        site: &str,
        sk: &str,
        lost_after_ms: i64,
        now: i64,
    ) -> Result<Lost, StoreError> {
        let Some(item) = self.read_item(conv_pk(site), sk).await? else {
            return Ok(Lost::Skipped);
        };
        let mut c = Conversion::from_item(&item)?;
        let Some(seen) = c.work_at.filter(|at| *at < now - lost_after_ms) else {
            return Ok(Lost::Skipped);
        };
        // A sender holds it: being sent, not lost (a claim leaves the row
        // at its due time in the index).
        if c.status != ConversionStatus::Pending || c.lease_until.is_some_and(|until| until > now) {
            return Ok(Lost::Skipped);
        }
        if let Some(lease) = get_s(&item, "leaseId").filter(|_| c.lease_until.is_some())
            && self.settle_one(&mut c, lease).await?
        {
            return Ok(Lost::Settled);
        }
        // A claim counts its attempt; a message that never reached a sender
        // did not, so it is counted here.
        let counted = if c.lease_until.is_some() { 0 } else { 1 };
        let attempts = c.attempts + counted;
        // The rule the sender applies when it claims, for the attempt that
        // sending it again would count.
        // A sender that claimed the row may have sent it before it was
        // lost: Meta may hold the event.
        let unsure = c.unsure || c.lease_until.is_some();
        let fail = doomed(&c, attempts + 1, unsure, now);
        let t = &self.names.table;
        let base = Update::builder()
            .table_name(t)
            .key(PK, s(conv_pk(site)))
            .key(SK, s(sk))
            // Counted queued here or not as the flag read says.
            .condition_expression(format!(
                "#status = :pending AND workAt = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now) AND {}",
                uncounted_as(c.uncounted)
            ))
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":seen", n(seen))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":attempts", n(attempts));
        let mut items = vec![];
        let outcome = match &fail {
            Some(e) => {
                items.push(
                    TransactWriteItem::builder()
                        .update(
                            base.update_expression(
                                format!("SET #status = :failed, lastError = :e, attempts = :attempts REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil, workShard, workAt, nextAttemptAt, uncounted"),
                            )
                            .expression_attribute_values(":failed", s(ConversionStatus::Failed.as_str()))
                            .expression_attribute_values(":e", s(e))
                            .build()
                            .map_err(StoreError::ddb)?,
                        )
                        .build(),
                );
                let mut tally = Tally::default();
                let slug = slug_or_pixel(c.destination.as_deref());
                if c.uncounted {
                    tally.queued(slug, c.event_name, c.created_at, false);
                }
                tally.failed(slug, c.event_name, now);
                items.extend(tally.updates(t, site, shard_of(&c.event_id, COUNT_SHARDS))?);
                Lost::Failed
            }
            None => {
                items.push(
                    TransactWriteItem::builder()
                        .update(
                            base.update_expression(
                                "SET nextAttemptAt = :now, workAt = :now, attempts = :attempts, unsure = :unsure REMOVE leaseId, leaseUntil",
                            )
                            .expression_attribute_values(":now", n(now))
                            .expression_attribute_values(":unsure", aws_sdk_dynamodb::types::AttributeValue::Bool(unsure))
                            .build()
                            .map_err(StoreError::ddb)?,
                        )
                        .build(),
                );
                Lost::Requeued
            }
        };
        Ok(match self.transact(items).await? {
            None => outcome,
            Some(_) => Lost::Skipped,
        })
    }

    /// Deals with a late send batch: each of its rows pending with no
    /// entry of its own and late is dealt with as [`Self::recover_lost`]
    /// does, at most `limit` of them; then the batch is deleted when none
    /// of its rows is pending, or moved to the earliest time one is due
    /// (looked at again once that is late). A batch with late rows beyond
    /// `limit`, or more rows than a look reads, stays late for the next
    /// sweep. Answers each row dealt with, by key.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn sweep_batch(
        &self,
        site: &str,
        batch: &str,
        lost_after_ms: i64,
        now: i64,
        limit: usize,
    ) -> Result<Vec<(String, Lost)>, StoreError> {
        let Some(item) = self.read_item(send_batch_pk(site), batch).await? else {
            return Ok(vec![]);
        };
        let seen = get_n(&item, WORK_AT).unwrap_or(now);
        if seen >= now - lost_after_ms {
            // Moved on by another sweep meanwhile.
            return Ok(vec![]);
        }
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :at)")
            .expression_attribute_values(":pk", s(conv_pk(site)))
            .expression_attribute_values(":at", s(format!("{batch}#")))
            .consistent_read(true);
        let (mut watched, mut pages) = (vec![], 0);
        // Every row there, as the batch's list of counted rows names it.
        let mut found = std::collections::HashSet::new();
        self.query_pages(query, BATCH_PAGES, |items| {
            pages += 1;
            for item in items {
                let c = Conversion::from_item(item)?;
                let slug = slug_or_pixel(c.destination.as_deref());
                found.insert(send_batch_member(&c.sk, slug, c.event_name.as_str()));
                // A row with its own entry is looked after through it.
                if get_s(item, WORK_SHARD).is_none() && c.status == ConversionStatus::Pending {
                    watched.push(c);
                }
            }
            Ok(true)
        })
        .await?;
        // The last page read may not have been the last one.
        let mut unfinished = pages == BATCH_PAGES;
        // Rows counted and never written: their writer is long gone.
        let missing: Vec<String> = item
            .get(crate::posted::ROWS)
            .and_then(|v| v.as_ss().ok())
            .into_iter()
            .flatten()
            .filter(|m| !found.contains(*m))
            .cloned()
            .collect();
        if !missing.is_empty() && !unfinished {
            let created_at = batch.parse().unwrap_or(seen);
            let taken_back = self
                .uncount_unwritten(site, batch, created_at, &missing)
                .await?;
            // Not all of them at once, or a retry wrote one meanwhile: the
            // next look goes on.
            unfinished = !taken_back || missing.len() > crate::posted::UNLIST_AT_ONCE;
        }
        let mut dealt = vec![];
        let mut next: Option<i64> = None;
        for c in watched {
            let late = c.work_at.is_some_and(|at| at < now - lost_after_ms)
                && c.lease_until.is_none_or(|until| until <= now);
            if late && dealt.len() == limit {
                unfinished = true;
                break;
            }
            let outcome = if late {
                let lost = self.recover_lost(site, &c.sk, lost_after_ms, now).await?;
                dealt.push((c.sk.clone(), lost));
                lost
            } else {
                Lost::Skipped
            };
            if !matches!(outcome, Lost::Failed | Lost::Settled) {
                // Still pending: due again now (requeued), or later.
                let due = if late { now } else { c.work_at.unwrap_or(now) };
                next = Some(next.map_or(due, |n| n.min(due)).max(now));
            }
        }
        if unfinished {
            return Ok(dealt);
        }
        // A failed condition: another sweep moved the batch meanwhile.
        match next {
            None => {
                let delete = self
                    .ddb
                    .delete_item()
                    .table_name(&self.names.table)
                    .key(PK, s(send_batch_pk(site)))
                    .key(SK, s(batch))
                    .condition_expression("workAt = :seen")
                    .expression_attribute_values(":seen", n(seen));
                applied(delete.send().await)?;
            }
            Some(at) => {
                let update = self
                    .update_item(send_batch_pk(site), batch)
                    .update_expression("SET workAt = :at")
                    .condition_expression("workAt = :seen")
                    .expression_attribute_values(":seen", n(seen))
                    .expression_attribute_values(":at", n(at));
                applied(update.send().await)?;
            }
        }
        Ok(dealt)
    }
}
