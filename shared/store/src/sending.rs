//! A send attempt's life in DynamoDB: the `capi-sender` claims each row
//! (leases its attempt for 15 minutes and counts it, by one conditional
//! update that answers the row: nothing is read first), then ends it (sent,
//! retried or failed): the counters move first, with a receipt of the ends
//! they counted, then each row by a plain update that erases its hashes
//! ([`crate::receipts`] says why, and how a sender that stops in between is
//! made good).
//!
//! A claim leaves the row where it is in the `work` index (at the time its
//! attempt came due): moving it to the lease's end would cost two index
//! writes a conversion. The sweeper, which looks there for sends lost on
//! the way, passes over a row whose lease still runs, and finds one whose
//! sender died as soon as its lease ends.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName, SendEnd, wait_before_claim};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use futures::StreamExt;

use crate::attr::{FromItem, n, s};
use crate::items::MATCH_ATTRIBUTES;
use crate::keys::conv_pk;
use crate::receipts::{ROWS_PER_RECEIPT, Receipted, counted};
use crate::write::applied;
use crate::{Conversions, StoreError};

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

/// What one claim's update did.
enum Tried {
    /// Took the row: the row as claimed, and the lease of the attempt
    /// before if it never ended.
    Taken(Box<Conversion>, Option<String>),
    /// Did not: what to answer.
    Refused(Claim),
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
    /// Not counted yet: this end counts it queued, whatever the end.
    pub uncounted: bool,
    /// When it was created: the day it is counted queued on.
    pub created_at: i64,
    pub end: SendEnd,
}

impl Finish {
    /// `c`'s attempt ending as `end`.
    pub fn of(c: &Conversion, end: SendEnd) -> Self {
        Finish {
            site_id: c.site_id.clone(),
            destination: c.destination.clone(),
            sk: c.sk.clone(),
            event_id: c.event_id.clone(),
            event_name: c.event_name,
            in_send_batch: c.in_send_batch,
            uncounted: c.uncounted,
            created_at: c.created_at,
            end,
        }
    }
}

/// Claims in flight at once: a batch of 1,000 rows is claimed in the time
/// of about 60 updates.
const CLAIMS_AT_ONCE: usize = 16;

impl Conversions<'_> {
    /// Takes the attempt of a due, pending conversion for `lease_ms`,
    /// counting it: [`Self::claim_sends`] for one row.
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
        let keys = [(site.to_owned(), sk.to_owned())];
        let mut claims = self.claim_sends(&keys, lease_id, lease_ms, now).await?;
        Ok(claims.pop().unwrap_or(Claim::Gone))
    }

    /// Claims many rows at once, each by its own conditional update
    /// ([`CLAIMS_AT_ONCE`] at a time: a claim needs no other row's, and a
    /// transaction would bill each row's write twice) that answers the row
    /// as it was, whether it took it or not: a claim reads nothing first.
    /// A row taken over from an attempt that never ended is settled as
    /// that attempt's receipt says, each lease's receipts read once.
    /// Answers a claim per key, in order.
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
        let until = now + lease_ms;
        let tried: Vec<(usize, Result<Tried, StoreError>)> =
            futures::stream::iter((0..keys.len()).collect::<Vec<_>>())
                .map(|i| async move {
                    let (site, sk) = &keys[i];
                    (i, self.try_claim(site, sk, lease_id, until, now).await)
                })
                .buffer_unordered(CLAIMS_AT_ONCE)
                .collect()
                .await;
        let mut claims = vec![Claim::Gone; keys.len()];
        // The receipts of the leases rows were taken over from, by (site,
        // lease): a sender that died leaves many rows under one lease.
        let mut receipts = HashMap::new();
        for (i, tried) in tried {
            claims[i] = match tried? {
                Tried::Refused(claim) => claim,
                Tried::Taken(c, None) => Claim::Claimed(c),
                Tried::Taken(c, Some(before)) => {
                    self.take_over(*c, before, lease_id, &mut receipts).await?
                }
            };
        }
        Ok(claims)
    }

    /// One row's claim: leased until `until` and its attempt counted if it
    /// is pending, due and free, in one update that answers the row as it
    /// was (its `uncounted` flag and its lease read with the claim itself,
    /// not before it). DynamoDB bills no read for the row it answers.
    async fn try_claim(
        &self,
        site: &str,
        sk: &str,
        lease_id: &str,
        until: i64,
        now: i64,
    ) -> Result<Tried, StoreError> {
        let res = self
            .update_item(conv_pk(site), sk)
            .update_expression("SET attempts = attempts + :one, leaseId = :id, leaseUntil = :until")
            .condition_expression(
                "#status = :pending AND (attribute_not_exists(nextAttemptAt) OR nextAttemptAt <= :now) AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":id", s(lease_id))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let refused = match res {
            Ok(out) => {
                let old = out.attributes.unwrap_or_default();
                let mut c = Conversion::from_item(&old)?;
                // A lease still on the row is an attempt that never ended.
                let before = c
                    .lease_until
                    .and(crate::attr::get_s(&old, "leaseId"))
                    .map(str::to_owned);
                c.attempts += 1;
                c.lease_until = Some(until);
                return Ok(Tried::Taken(Box::new(c), before));
            }
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(refused)) => {
                    refused.item().cloned()
                }
                _ => return Err(StoreError::ddb(e)),
            },
        };
        // DynamoDB answers no row when there is none; read it when the
        // refusal came without one all the same.
        let row = match refused {
            Some(row) => Some(row),
            None => self.read_item(conv_pk(site), sk).await?,
        };
        let Some(row) = row else {
            return Ok(Tried::Refused(Claim::Gone));
        };
        let c = Conversion::from_item(&row)?;
        if c.status != ConversionStatus::Pending {
            return Ok(Tried::Refused(Claim::Gone));
        }
        // Another attempt holds it, or its time has not come. A row held
        // under this very lease is this claim's own, applied and its answer
        // lost (the SDK retried it): what it took over is no longer known,
        // so it waits too, and is taken over once its lease ends.
        Ok(Tried::Refused(Claim::Wait(
            wait_before_claim(&c, now).unwrap_or(1_000),
        )))
    }

    /// `c`, just claimed from the attempt under `before` that never ended:
    /// ended as that attempt's receipt says if its sender counted the end
    /// and stopped before writing it (`Gone`: nothing to send); else held,
    /// and marked unsure (that attempt may have reached Meta).
    async fn take_over(
        &self,
        mut c: Conversion,
        before: String,
        lease_id: &str,
        receipts: &mut HashMap<(String, String), HashMap<String, Receipted>>,
    ) -> Result<Claim, StoreError> {
        let key = (c.site_id.clone(), before);
        if !receipts.contains_key(&key) {
            let ends = self.receipted(&key.0, &key.1).await?;
            receipts.insert(key.clone(), ends);
        }
        if self.settle_from(&mut c, &receipts[&key], lease_id).await? {
            return Ok(Claim::Gone);
        }
        if !c.unsure {
            self.update_item(conv_pk(&c.site_id), &c.sk)
                .update_expression("SET unsure = :yes")
                .condition_expression("leaseId = :id")
                .expression_attribute_values(":yes", AttributeValue::Bool(true))
                .expression_attribute_values(":id", s(lease_id))
                .send()
                .await
                .map_err(StoreError::ddb)?;
            c.unsure = true;
        }
        Ok(Claim::Claimed(Box::new(c)))
    }

    /// Ends attempts held under `lease_id`: the counters move first, with
    /// a receipt of the ends they counted ([`crate::receipts`]), then each
    /// row by a plain update: sent and failed rows lose their hashes and
    /// leave the pending index, a site's hundred rows at a time. Answers,
    /// per finish, whether it was applied (`Some(false)`: the lease was
    /// lost, another attempt owns the row, and its counting was taken
    /// back), or `None` when `stop` came before its hundred were started:
    /// that row keeps its lease, and its next claim once the lease ends
    /// sends it again, unsure, as after a sender that died. The caller
    /// gives a `stop` its invocation can outlive by one hundred's writes.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails; a row counted but not
    /// ended is ended as its receipt says by the next claim of it.
    pub async fn finish_sends(
        &self,
        lease_id: &str,
        finishes: &[Finish],
        now: i64,
        stop: Option<Instant>,
    ) -> Result<Vec<Option<bool>>, StoreError> {
        let mut applied_all = vec![None; finishes.len()];
        let mut by_site: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, f) in finishes.iter().enumerate() {
            by_site.entry(&f.site_id).or_default().push(i);
        }
        let mut part = 0;
        for (site, indexes) in by_site {
            for chunk in indexes.chunks(ROWS_PER_RECEIPT) {
                if stop.is_some_and(|stop| Instant::now() >= stop) {
                    return Ok(applied_all);
                }
                let batch: Vec<&Finish> = chunk.iter().map(|i| &finishes[*i]).collect();
                let ends: Vec<&Finish> = batch.iter().copied().filter(|f| counted(f)).collect();
                if !ends.is_empty() {
                    self.count_ends(site, lease_id, part, &ends, now).await?;
                    part += 1;
                }
                let applied = self.end_rows(site, lease_id, &batch, now).await?;
                let lost: Vec<&Finish> = batch
                    .iter()
                    .zip(&applied)
                    .filter(|(f, applied)| !**applied && counted(f))
                    .map(|(f, _)| *f)
                    .collect();
                if !lost.is_empty() {
                    self.uncount_ends(site, &lost, now).await?;
                }
                for (i, applied) in chunk.iter().zip(applied) {
                    applied_all[*i] = Some(applied);
                }
            }
        }
        Ok(applied_all)
    }

    /// Ends each of `batch`'s rows ([`CLAIMS_AT_ONCE`] at a time); answers,
    /// per row, whether it was still pending under `lease_id`.
    pub(crate) async fn end_rows(
        &self,
        site: &str,
        lease_id: &str,
        batch: &[&Finish],
        now: i64,
    ) -> Result<Vec<bool>, StoreError> {
        let ended: Vec<(usize, Result<bool, StoreError>)> =
            futures::stream::iter((0..batch.len()).collect::<Vec<_>>())
                .map(|k| async move { (k, self.end_row(site, lease_id, batch[k], now).await) })
                .buffer_unordered(CLAIMS_AT_ONCE)
                .collect()
                .await;
        let mut applied = vec![false; batch.len()];
        for (k, ended) in ended {
            applied[k] = ended?;
        }
        Ok(applied)
    }

    /// One row's end, if it is still pending under `lease_id` (`now`: the
    /// time it was sent at).
    pub(crate) async fn end_row(
        &self,
        site: &str,
        lease_id: &str,
        f: &Finish,
        now: i64,
    ) -> Result<bool, StoreError> {
        // A row with its own `work` entry leaves it as it ends; one its
        // send batch watches has none to leave (its `workAt` stays, in no
        // index without a shard), so its end touches no index key.
        let left = if f.in_send_batch {
            ""
        } else {
            ", workShard, workAt"
        };
        // Counted queued with this end (any end): no longer uncounted.
        let counted = if f.uncounted { ", uncounted" } else { "" };
        let update = self
            .update_item(conv_pk(site), &f.sk)
            .condition_expression("leaseId = :lease AND #status = :pending")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":lease", s(lease_id))
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()));
        let update = match &f.end {
            SendEnd::Sent => update
                .update_expression(format!(
                    "SET #status = :sent, sentAt = :now REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil{left}, nextAttemptAt, lastError{counted}"
                ))
                .expression_attribute_values(":sent", s(ConversionStatus::Sent.as_str()))
                .expression_attribute_values(":now", n(now)),
            // Its message goes back to the queue: due again now, so the
            // sweeper does not take it for lost meanwhile.
            SendEnd::Released => update
                .update_expression(format!(
                    "SET attempts = attempts - :one, workAt = :now REMOVE leaseId, leaseUntil{counted}"
                ))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":now", n(now)),
            SendEnd::Retry {
                at,
                last_error,
                unsure,
            } => update
                .update_expression(format!(
                    "SET nextAttemptAt = :at, workAt = :at, lastError = :e, unsure = :unsure REMOVE leaseId, leaseUntil{counted}"
                ))
                .expression_attribute_values(":at", n(*at))
                .expression_attribute_values(":e", s(last_error))
                .expression_attribute_values(":unsure", AttributeValue::Bool(*unsure)),
            SendEnd::Failed { last_error } => update
                .update_expression(format!(
                    "SET #status = :failed, lastError = :e REMOVE {MATCH_ATTRIBUTES}, leaseId, leaseUntil{left}, nextAttemptAt{counted}"
                ))
                .expression_attribute_values(":failed", s(ConversionStatus::Failed.as_str()))
                .expression_attribute_values(":e", s(last_error)),
        };
        Ok(applied(update.send().await)?.is_some())
    }
}
