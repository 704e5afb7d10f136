//! A send attempt's life in DynamoDB: the `capi-sender` claims each row
//! (leases its attempt for 15 minutes and counts it, conditional on the row
//! as it was read), then ends it (sent, retried or failed) with the
//! counters moved and the hashes erased in the same transaction.
//!
//! A claim leaves the row where it is in the `work` index (at the time its
//! attempt came due): moving it to the lease's end would cost two index
//! writes a conversion. The sweeper, which looks there for sends lost on
//! the way, passes over a row whose lease still runs, and finds one whose
//! sender died as soon as its lease ends.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName, SendEnd, wait_before_claim};
use aws_sdk_dynamodb::types::{ReturnValue, TransactWriteItem, Update};
use futures::StreamExt;

use crate::attr::{FromItem, n, s};
use crate::items::MATCH_ATTRIBUTES;
use crate::keys::{COUNT_SHARDS, PK, SK, conv_pk, shard_of};
use crate::write::applied;
use crate::{Conversions, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

use crate::tally::Tally;
use adtrail_domain::destinations::slug_or_pixel;

/// What a claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This sender holds the attempt (already counted in `attempts`).
    Claimed(Box<Conversion>),
    /// Pending, but another attempt holds it or its time has not come:
    /// look again in this many milliseconds.
    Wait(i64),
    /// Sent, failed or removed: nothing to do.
    Gone,
}

/// An attempt's end, for [`Conversions::finish_sends`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub site_id: String,
    /// The row's destination (`None`: the pixel), for its counters.
    pub destination: Option<String>,
    pub sk: String,
    pub event_id: String,
    pub event_name: EventName,
    /// Its send batch watches it: no `work` entry of its own to leave.
    pub in_send_batch: bool,
    pub end: SendEnd,
}

/// Claims in flight at once: a batch of 1,000 rows is claimed in the time
/// of about 60 updates.
const CLAIMS_AT_ONCE: usize = 16;

/// Most conversions one transaction finishes (each site's two counter
/// items fit beside them in DynamoDB's 100).
const FINISH_CHUNK: usize = 48;

impl Conversions<'_> {
    /// Takes the attempt of a due, pending conversion for `lease_ms`,
    /// counting it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn claim_send(
        &self,
        site: &str,
        sk: &str,
        lease_id: &str,
        lease_ms: i64,
        now: i64,
    ) -> Result<Claim, StoreError> {
        let until = now + lease_ms;
        let res = self.update_item(conv_pk(site), sk)
            .update_expression("SET attempts = attempts + :one, leaseId = :id, leaseUntil = :until")
            .condition_expression(
                "#status = :pending AND nextAttemptAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":id", s(lease_id))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        if let Some(out) = applied(res)? {
            let mut c = Conversion::from_item(&out.attributes.unwrap_or_default())?;
            let taken_over = c.lease_until.is_some();
            c.attempts += 1;
            c.lease_until = Some(until);
            if taken_over && !c.unsure {
                // The attempt before was claimed and never ended: it may
                // have reached Meta.
                self.update_item(conv_pk(site), sk)
                    .update_expression("SET unsure = :yes")
                    .condition_expression("leaseId = :id")
                    .expression_attribute_values(":yes", AttributeValue::Bool(true))
                    .expression_attribute_values(":id", s(lease_id))
                    .send()
                    .await
                    .map_err(StoreError::ddb)?;
                c.unsure = true;
            }
            return Ok(Claim::Claimed(Box::new(c)));
        }
        let Some(item) = self.read_item(conv_pk(site), sk).await? else {
            return Ok(Claim::Gone);
        };
        let c = Conversion::from_item(&item)?;
        if c.status != ConversionStatus::Pending {
            return Ok(Claim::Gone);
        }
        // Lost to another claim between our read and our write.
        Ok(Claim::Wait(wait_before_claim(&c, now).unwrap_or(1_000)))
    }

    /// Claims many rows at once: one strongly-consistent read of every row
    /// (100 a request), then each due one leased and counted by its own
    /// update, conditional on the row as it was read ([`CLAIMS_AT_ONCE`] at
    /// a time: a claim needs no other row's, and a transaction would bill
    /// each row's write twice). A row another writer got to first is
    /// claimed again as it is now. Answers a claim per key, in order.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn claim_sends(
        &self,
        keys: &[(String, String)],
        lease_id: &str,
        lease_ms: i64,
        now: i64,
    ) -> Result<Vec<Claim>, StoreError> {
        let read = self
            .batch_read(
                keys.iter()
                    .map(|(site, sk)| (conv_pk(site), sk.clone()))
                    .collect(),
            )
            .await?;
        let mut rows: BTreeMap<(String, String), Conversion> = BTreeMap::new();
        for item in &read {
            let c = Conversion::from_item(item)?;
            rows.insert((c.site_id.clone(), c.sk.clone()), c);
        }
        let until = now + lease_ms;
        let (mut claims, due) = sort_claims(keys, &rows, now);
        let rows = &rows;
        let taken: Vec<(usize, Result<bool, StoreError>)> = futures::stream::iter(due)
            .map(|i| async move {
                let (site, sk) = &keys[i];
                let update = self.claim_update(site, sk, &rows[&keys[i]], lease_id, until, now);
                (i, applied(update.send().await).map(|out| out.is_some()))
            })
            .buffer_unordered(CLAIMS_AT_ONCE)
            .collect()
            .await;
        for (i, taken) in taken {
            if taken? {
                let mut c = rows[&keys[i]].clone();
                c.unsure = c.unsure || c.lease_until.is_some();
                c.attempts += 1;
                c.lease_until = Some(until);
                claims[i] = Claim::Claimed(Box::new(c));
            } else {
                // Another writer got in the way: claim it as it is now.
                let (site, sk) = &keys[i];
                claims[i] = self.claim_send(site, sk, lease_id, lease_ms, now).await?;
            }
        }
        Ok(claims)
    }

    /// The update that claims one row as it was read: its attempt counted
    /// and leased until `until`, conditional on nobody having moved it.
    fn claim_update(
        &self,
        site: &str,
        sk: &str,
        c: &Conversion,
        lease_id: &str,
        until: i64,
        now: i64,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        // A lease still on the row is an attempt that never ended: it may
        // have reached Meta.
        let unsure = c.unsure || c.lease_until.is_some();
        let condition = if c.next_attempt_at.is_none() {
            "#status = :pending AND attempts = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)"
        } else {
            "#status = :pending AND attempts = :seen AND nextAttemptAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)"
        };
        self.update_item(conv_pk(site), sk)
            .update_expression(
                "SET attempts = :next, leaseId = :id, leaseUntil = :until, unsure = :unsure",
            )
            .expression_attribute_values(":unsure", AttributeValue::Bool(unsure))
            .condition_expression(condition)
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":seen", n(c.attempts))
            .expression_attribute_values(":next", n(c.attempts + 1))
            .expression_attribute_values(":id", s(lease_id))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
    }

    /// Ends attempts held under `lease_id`: sent and failed rows lose their
    /// hashes and leave the pending index; the counters move in the same
    /// transaction. Answers, per finish, whether it was applied (`false`:
    /// the lease was lost, another attempt owns the row).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn finish_sends(
        &self,
        lease_id: &str,
        finishes: &[Finish],
        now: i64,
    ) -> Result<Vec<bool>, StoreError> {
        let mut applied_all = vec![false; finishes.len()];
        let mut by_site: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, f) in finishes.iter().enumerate() {
            by_site.entry(&f.site_id).or_default().push(i);
        }
        for (site, indexes) in by_site {
            for chunk in indexes.chunks(FINISH_CHUNK) {
                let batch: Vec<&Finish> = chunk.iter().map(|i| &finishes[*i]).collect();
                if self.finish_tx(site, lease_id, &batch, now).await? {
                    for i in chunk {
                        applied_all[*i] = true;
                    }
                    continue;
                }
                // One lost lease cancels the lot: finish one by one.
                for i in chunk {
                    applied_all[*i] = self
                        .finish_tx(site, lease_id, &[&finishes[*i]], now)
                        .await?;
                }
            }
        }
        Ok(applied_all)
    }

    async fn finish_tx(
        &self,
        site: &str,
        lease_id: &str,
        batch: &[&Finish],
        now: i64,
    ) -> Result<bool, StoreError> {
        let t = &self.names.table;
        let mut items = vec![];
        let mut tally = Tally::default();
        for f in batch {
            // A row with its own `work` entry leaves it as it ends; one its
            // send batch watches has none to leave (its `workAt` stays, in
            // no index without a shard), so its end touches no index key.
            let left = if f.in_send_batch {
                ""
            } else {
                ", workShard, workAt"
            };
            let update = Update::builder()
                .table_name(t)
                .key(PK, s(conv_pk(site)))
                .key(SK, s(&f.sk))
                .condition_expression("leaseId = :lease AND #status = :pending")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":lease", s(lease_id))
                .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()));
            let update = match &f.end {
                SendEnd::Sent => {
                    tally.sent(slug_or_pixel(f.destination.as_deref()), f.event_name, now);
                    update
                        .update_expression(
                            format!("SET #status = :sent, sentAt = :now REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil{left}, nextAttemptAt, lastError"),
                        )
                        .expression_attribute_values(":sent", s(ConversionStatus::Sent.as_str()))
                        .expression_attribute_values(":now", n(now))
                }
                // Its message goes back to the queue: due again now, so the
                // sweeper does not take it for lost meanwhile.
                SendEnd::Released => update
                    .update_expression(
                        "SET attempts = attempts - :one, workAt = :now REMOVE leaseId, leaseUntil",
                    )
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(":now", n(now)),
                SendEnd::Retry {
                    at,
                    last_error,
                    unsure,
                } => update
                    .update_expression(
                        "SET nextAttemptAt = :at, workAt = :at, lastError = :e, unsure = :unsure REMOVE leaseId, leaseUntil",
                    )
                    .expression_attribute_values(":at", n(*at))
                    .expression_attribute_values(":e", s(last_error))
                    .expression_attribute_values(":unsure", AttributeValue::Bool(*unsure)),
                SendEnd::Failed { last_error } => {
                    tally.failed(slug_or_pixel(f.destination.as_deref()), f.event_name, now);
                    update
                        .update_expression(
                            format!("SET #status = :failed, lastError = :e REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil{left}, nextAttemptAt"),
                        )
                        .expression_attribute_values(
                            ":failed",
                            s(ConversionStatus::Failed.as_str()),
                        )
                        .expression_attribute_values(":e", s(last_error))
                }
            };
            items.push(
                TransactWriteItem::builder()
                    .update(update.build().map_err(StoreError::ddb)?)
                    .build(),
            );
        }
        let shard = shard_of(&batch[0].event_id, COUNT_SHARDS);
        items.extend(tally.updates(t, site, shard)?);
        Ok(self.transact(items).await?.is_none())
    }
}

/// Each key's claim as its row was read (`Gone` or `Wait`), and the
/// indexes of the rows due now, to be claimed.
fn sort_claims(
    keys: &[(String, String)],
    rows: &BTreeMap<(String, String), Conversion>,
    now: i64,
) -> (Vec<Claim>, Vec<usize>) {
    let mut claims: Vec<Claim> = Vec::with_capacity(keys.len());
    let mut due: Vec<usize> = vec![];
    for (i, key) in keys.iter().enumerate() {
        let claim = match rows.get(key) {
            None => Claim::Gone,
            Some(c) if c.status != ConversionStatus::Pending => Claim::Gone,
            Some(c) => match wait_before_claim(c, now) {
                Some(ms) => Claim::Wait(ms),
                None => {
                    due.push(i);
                    Claim::Gone
                }
            },
        };
        claims.push(claim);
    }
    (claims, due)
}
