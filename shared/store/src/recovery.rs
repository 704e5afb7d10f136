//! Sends lost on the way: the sweeper finds pending rows whose attempt was
//! due long ago and either puts them back in line (counting the lost
//! attempt) or fails them by the domain's rule.

use adtrail_domain::capi::{Conversion, ConversionStatus, doomed};
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use crate::attr::{FromItem, Item, get_s, n, s};
use crate::items::MATCH_ATTRIBUTES;
use crate::keys::{
    COUNT_SHARDS, PK, SK, WORK_INDEX, conv_pk, parse_conv_pk, send_shard_n, shard_of,
};
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
}

/// Where the next page of [`Conversions::late_sends`] starts: rows a
/// sender still holds stay at the head of the index, so the next page must
/// start past them rather than at the head again.
#[derive(Debug, Clone)]
pub struct LateCursor(Item);

impl Conversions<'_> {
    /// Pending rows of one shard whose attempt was due before `before`,
    /// oldest first, at most `limit`, from `after` on; answers them and
    /// where the next page starts (`None`: no more).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn late_sends(
        &self,
        shard: u32,
        before: i64,
        limit: i32,
        after: Option<LateCursor>,
    ) -> Result<(Vec<(String, String)>, Option<LateCursor>), StoreError> {
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
                let pk = parse_conv_pk(get_s(item, PK)?)?;
                Some((pk.to_owned(), get_s(item, SK)?.to_owned()))
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
        let c = Conversion::from_item(&item)?;
        let Some(seen) = c.work_at.filter(|at| *at < now - lost_after_ms) else {
            return Ok(Lost::Skipped);
        };
        // A sender holds it: being sent, not lost (a claim leaves the row
        // at its due time in the index).
        if c.status != ConversionStatus::Pending || c.lease_until.is_some_and(|until| until > now) {
            return Ok(Lost::Skipped);
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
            .condition_expression(
                "#status = :pending AND workAt = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
            )
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
                                format!("SET #status = :failed, lastError = :e, attempts = :attempts REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil, workShard, workAt, nextAttemptAt"),
                            )
                            .expression_attribute_values(":failed", s(ConversionStatus::Failed.as_str()))
                            .expression_attribute_values(":e", s(e))
                            .build()
                            .map_err(StoreError::ddb)?,
                        )
                        .build(),
                );
                let mut tally = Tally::default();
                tally.failed(slug_or_pixel(c.destination.as_deref()), c.event_name, now);
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
}
