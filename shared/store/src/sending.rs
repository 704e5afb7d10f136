//! A send attempt's life in DynamoDB: the `capi-sender` claims each row
//! (leases its attempt for 15 minutes and counts it, conditional on the row
//! as it was read), then ends it (sent, retried or failed): the counters
//! move first, with a receipt of the ends they counted, then each row by a
//! plain update that erases its hashes ([`crate::receipts`] says why, and
//! how a sender that stops in between is made good).
//!
//! A claim leaves the row where it is in the `work` index (at the time its
//! attempt came due): moving it to the lease's end would cost two index
//! writes a conversion. The sweeper, which looks there for sends lost on
//! the way, passes over a row whose lease still runs, and finds one whose
//! sender died as soon as its lease ends.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName, SendEnd, wait_before_claim};
use aws_sdk_dynamodb::types::ReturnValue;
use futures::StreamExt;

use crate::attr::{FromItem, n, s};
use crate::items::{MATCH_ATTRIBUTES, uncounted_as};
use crate::keys::conv_pk;
use crate::receipts::{ROWS_PER_RECEIPT, counted};
use crate::write::applied;
use crate::{Conversions, StoreError};
use aws_sdk_dynamodb::types::AttributeValue;

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
            let old = out.attributes.unwrap_or_default();
            let mut c = Conversion::from_item(&old)?;
            let taken_over = c.lease_until.is_some();
            c.attempts += 1;
            c.lease_until = Some(until);
            // The attempt before may have counted its end and stopped
            // before writing it: ended (or its flag taken off) as its
            // receipt says, under this lease.
            if let Some(before) = crate::attr::get_s(&old, "leaseId").filter(|_| taken_over)
                && self.settle_taken(&mut c, before, lease_id).await?
            {
                return Ok(Claim::Gone);
            }
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
        let read = self.read_to_claim(keys).await?;
        let mut rows: BTreeMap<(String, String), Conversion> = BTreeMap::new();
        // The lease each row's last attempt left on it, if it never ended.
        let mut leases: BTreeMap<(String, String), String> = BTreeMap::new();
        for item in &read {
            let c = Conversion::from_item(item)?;
            let key = (c.site_id.clone(), c.sk.clone());
            if let Some(lease) = crate::attr::get_s(item, "leaseId") {
                leases.insert(key.clone(), lease.to_owned());
            }
            rows.insert(key, c);
        }
        let until = now + lease_ms;
        let (mut claims, due) = sort_claims(keys, &rows, now);
        let due = self
            .settle_receipted(keys, &mut rows, &leases, due, &mut claims)
            .await?;
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

    /// The rows of `keys`, read eventually consistently (half the read
    /// units): every claim is conditional on the row as it was read, so a
    /// stale row only fails its claim, which is then made on the row as it
    /// is. A row missing or no longer pending may be a read of the last
    /// second's past (a row just written, a failed row just opened again):
    /// those are read again strongly before they are let go.
    async fn read_to_claim(
        &self,
        keys: &[(String, String)],
    ) -> Result<Vec<crate::attr::Item>, StoreError> {
        let key = |(site, sk): &(String, String)| (conv_pk(site), sk.clone());
        let mut read = self
            .batch_read_as(keys.iter().map(key).collect(), false)
            .await?;
        let pending = ConversionStatus::Pending.as_str();
        read.retain(|item| crate::attr::get_s(item, "status") == Some(pending));
        let kept: std::collections::HashSet<(String, String)> = read
            .iter()
            .filter_map(|item| {
                let pk = crate::attr::get_s(item, crate::keys::PK)?;
                let sk = crate::attr::get_s(item, crate::keys::SK)?;
                Some((pk.to_owned(), sk.to_owned()))
            })
            .collect();
        let again: Vec<(String, String)> =
            keys.iter().map(key).filter(|k| !kept.contains(k)).collect();
        if !again.is_empty() {
            read.extend(self.batch_read(again).await?);
        }
        Ok(read)
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
        let mut condition = String::from(
            "#status = :pending AND attempts = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
        );
        if c.next_attempt_at.is_some() {
            condition.push_str(" AND nextAttemptAt <= :now");
        }
        // Its end counts it queued or not as the flag read says: a flag
        // another claim's settling took off since makes this claim fail,
        // and the row is claimed again as it is.
        condition.push_str(" AND ");
        condition.push_str(uncounted_as(c.uncounted));
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

    /// Ends attempts held under `lease_id`: the counters move first, with
    /// a receipt of the ends they counted ([`crate::receipts`]), then each
    /// row by a plain update: sent and failed rows lose their hashes and
    /// leave the pending index. Answers, per finish, whether it was applied
    /// (`false`: the lease was lost, another attempt owns the row, and its
    /// counting was taken back).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails; a row counted but not
    /// ended is ended as its receipt says by the next claim of it.
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
        let mut part = 0;
        for (site, indexes) in by_site {
            for chunk in indexes.chunks(ROWS_PER_RECEIPT) {
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
                    applied_all[*i] = applied;
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
