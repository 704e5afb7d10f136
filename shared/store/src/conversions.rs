//! Conversions after they are queued: the send lease the `capi-sender`
//! takes on each attempt, how an attempt ends (sent, retried, failed) with
//! the counters moved in the same transaction, the sweeper's view of lost
//! sends, the site's history newest first, and the sharded counters.
//!
//! A conversion is pending while it sits in the `work` index (`send#<n>`,
//! by the time its attempt is due); sent and failed rows leave the index and
//! lose their hashes, and stay as the site's history.

use std::collections::BTreeMap;

use adtrail_domain::capi::{
    Conversion, ConversionStatus, EventName, SendEnd, doomed, wait_before_claim,
};
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::time::utc_day;
use aws_sdk_dynamodb::types::{ReturnValue, TransactWriteItem, Update};

use crate::attr::{FromItem, Item, get_n, get_s, n, need_s, s};
use crate::keys::{
    COUNT_SHARDS, COUNT_TOTAL_SK, PK, SK, WORK_AT, WORK_INDEX, conv_pk, count_day_sk, count_pk,
    parse_conv_pk, parse_count_day_sk, send_shard_n, shard_of,
};
use crate::write::{applied, transaction_failed_at};
use crate::{Aws, StoreError};

impl FromItem for Conversion {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let ph: Vec<String> = item
            .get("ph")
            .and_then(|v| v.as_ss().ok())
            .cloned()
            .unwrap_or_default();
        let external_id = get_s(item, "externalId").map(str::to_owned);
        let hashes =
            (!ph.is_empty() || external_id.is_some()).then_some(ContactHashes { ph, external_id });
        Ok(Self {
            site_id: need_s(item, "siteId")?,
            sk: need_s(item, SK)?,
            event_id: need_s(item, "eventId")?,
            event_name: get_s(item, "eventName")
                .and_then(EventName::parse)
                .ok_or_else(|| StoreError::Malformed("conversion event".into()))?,
            lead_id: need_s(item, "leadId")?,
            lead_key: need_s(item, "leadKey")?,
            event_time: get_n(item, "eventTime").unwrap_or(0),
            created_at: get_n(item, "createdAt").unwrap_or(0),
            status: get_s(item, "status")
                .and_then(ConversionStatus::parse)
                .ok_or_else(|| StoreError::Malformed("conversion status".into()))?,
            attempts: get_n(item, "attempts").unwrap_or(0),
            next_attempt_at: get_n(item, "nextAttemptAt"),
            lease_until: get_n(item, "leaseUntil"),
            value_cents: get_n(item, "valueCents"),
            currency: get_s(item, "currency").map(str::to_owned),
            sent_at: get_n(item, "sentAt"),
            last_error: get_s(item, "lastError").map(str::to_owned),
            hashes,
            work_at: get_n(item, WORK_AT),
        })
    }
}

/// An `ADD` to one counter item (`day`: a day item, else the totals).
pub(crate) fn counter_update(
    table: &str,
    site: &str,
    shard: u32,
    deltas: &[(&str, i64)],
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
            .expression_attribute_names(format!("#c{i}"), *name)
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

/// An attempt's end, for [`Aws::finish_sends`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub site_id: String,
    pub sk: String,
    pub event_id: String,
    pub event_name: EventName,
    pub end: SendEnd,
}

/// The counters of a site's conversions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
    /// Accepted by Meta, by UTC day and event.
    pub days: BTreeMap<i64, BTreeMap<EventName, i64>>,
}

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

/// Most conversions one transaction finishes (each site's two counter
/// items fit beside them in DynamoDB's 100).
const FINISH_CHUNK: usize = 48;

impl Aws {
    /// Rows by sort key, strongly read.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_conversions(
        &self,
        site: &str,
        sks: &[String],
    ) -> Result<Vec<Conversion>, StoreError> {
        let keys = sks.iter().map(|sk| (conv_pk(site), sk.clone())).collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(Conversion::from_item)
            .collect()
    }

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
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .key(PK, s(conv_pk(site)))
            .key(SK, s(sk))
            .update_expression(
                "SET attempts = attempts + :one, leaseId = :id, leaseUntil = :until, workAt = :until",
            )
            .condition_expression(
                "#status = :pending AND nextAttemptAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":id", s(lease_id))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        if let Some(out) = applied(res)? {
            return Ok(Claim::Claimed(Box::new(Conversion::from_item(
                &out.attributes.unwrap_or_default(),
            )?)));
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
    /// (100 a request), then the due ones leased and counted in
    /// transactions of up to 100, each update conditional on the row as it
    /// was read. A transaction another writer got in the way of is claimed
    /// again row by row. Answers a claim per key, in order.
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
        for chunk in due.chunks(100) {
            let mut items = vec![];
            for i in chunk {
                let (site, sk) = &keys[*i];
                let c = &rows[&keys[*i]];
                let mut update = Update::builder()
                    .table_name(&self.names.table)
                    .key(PK, s(conv_pk(site)))
                    .key(SK, s(sk))
                    .update_expression(
                        "SET attempts = :next, leaseId = :id, leaseUntil = :until, workAt = :until",
                    )
                    .condition_expression(
                        "#status = :pending AND attempts = :seen AND nextAttemptAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
                    )
                    .expression_attribute_names("#status", "status")
                    .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
                    .expression_attribute_values(":seen", n(c.attempts))
                    .expression_attribute_values(":next", n(c.attempts + 1))
                    .expression_attribute_values(":id", s(lease_id))
                    .expression_attribute_values(":until", n(until))
                    .expression_attribute_values(":now", n(now));
                if c.next_attempt_at.is_none() {
                    update = update.condition_expression(
                        "#status = :pending AND attempts = :seen AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)",
                    );
                }
                items.push(
                    TransactWriteItem::builder()
                        .update(update.build().map_err(StoreError::ddb)?)
                        .build(),
                );
            }
            let result = self
                .ddb
                .transact_write_items()
                .set_transact_items(Some(items))
                .send()
                .await;
            match result {
                Ok(_) => {
                    for i in chunk {
                        let mut c = rows[&keys[*i]].clone();
                        c.attempts += 1;
                        c.lease_until = Some(until);
                        c.work_at = Some(until);
                        claims[*i] = Claim::Claimed(Box::new(c));
                    }
                }
                Err(e) if transaction_failed_at(&e).is_some() => {
                    for i in chunk {
                        let (site, sk) = &keys[*i];
                        claims[*i] = self.claim_send(site, sk, lease_id, lease_ms, now).await?;
                    }
                }
                Err(e) => return Err(StoreError::ddb(e)),
            }
        }
        Ok(claims)
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
        let mut sent = 0;
        let mut failed = 0;
        let mut by_event: BTreeMap<EventName, i64> = BTreeMap::new();
        for f in batch {
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
                    sent += 1;
                    *by_event.entry(f.event_name).or_default() += 1;
                    update
                        .update_expression(
                            "SET #status = :sent, sentAt = :now REMOVE ph, externalId, leaseId, leaseUntil, workShard, workAt, nextAttemptAt, lastError",
                        )
                        .expression_attribute_values(":sent", s(ConversionStatus::Sent.as_str()))
                        .expression_attribute_values(":now", n(now))
                }
                SendEnd::Retry { at, last_error } => update
                    .update_expression(
                        "SET nextAttemptAt = :at, workAt = :at, lastError = :e REMOVE leaseId, leaseUntil",
                    )
                    .expression_attribute_values(":at", n(*at))
                    .expression_attribute_values(":e", s(last_error)),
                SendEnd::Failed { last_error } => {
                    failed += 1;
                    update
                        .update_expression(
                            "SET #status = :failed, lastError = :e REMOVE ph, externalId, leaseId, leaseUntil, workShard, workAt, nextAttemptAt",
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
        if sent + failed > 0 {
            items.push(counter_update(
                t,
                site,
                shard,
                &[
                    ("pending", -(sent + failed)),
                    ("sent", sent),
                    ("failed", failed),
                ],
                None,
            )?);
        }
        if !by_event.is_empty() {
            let deltas: Vec<(&str, i64)> = by_event.iter().map(|(e, k)| (e.as_str(), *k)).collect();
            items.push(counter_update(t, site, shard, &deltas, Some(utc_day(now)))?);
        }
        match self
            .ddb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if transaction_failed_at(&e).is_some() => Ok(false),
            Err(e) => Err(StoreError::ddb(e)),
        }
    }

    /// Pending rows of one shard whose attempt was due before `before`,
    /// oldest first, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn late_sends(
        &self,
        shard: u32,
        before: i64,
        limit: i32,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(WORK_INDEX)
            .key_condition_expression("workShard = :shard AND workAt < :before")
            .expression_attribute_values(":shard", s(send_shard_n(shard)))
            .expression_attribute_values(":before", n(before))
            .limit(limit)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(out
            .items()
            .iter()
            .filter_map(|item| {
                let pk = parse_conv_pk(get_s(item, PK)?)?;
                Some((pk.to_owned(), get_s(item, SK)?.to_owned()))
            })
            .collect())
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
        if c.status != ConversionStatus::Pending {
            return Ok(Lost::Skipped);
        }
        // A claim counts its attempt; a message that never reached a sender
        // did not, so it is counted here.
        let counted = if c.lease_until.is_some() { 0 } else { 1 };
        let attempts = c.attempts + counted;
        // The rule the sender applies when it claims, for the attempt that
        // sending it again would count.
        let fail = doomed(c.event_time, attempts + 1, c.hashes.is_some(), now);
        let t = &self.names.table;
        let base = Update::builder()
            .table_name(t)
            .key(PK, s(conv_pk(site)))
            .key(SK, s(sk))
            .condition_expression("#status = :pending AND workAt = :seen")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(ConversionStatus::Pending.as_str()))
            .expression_attribute_values(":seen", n(seen))
            .expression_attribute_values(":attempts", n(attempts));
        let mut items = vec![];
        let outcome = match &fail {
            Some(e) => {
                items.push(
                    TransactWriteItem::builder()
                        .update(
                            base.update_expression(
                                "SET #status = :failed, lastError = :e, attempts = :attempts REMOVE ph, externalId, leaseId, leaseUntil, workShard, workAt, nextAttemptAt",
                            )
                            .expression_attribute_values(":failed", s(ConversionStatus::Failed.as_str()))
                            .expression_attribute_values(":e", s(e))
                            .build()
                            .map_err(StoreError::ddb)?,
                        )
                        .build(),
                );
                items.push(counter_update(
                    t,
                    site,
                    shard_of(&c.event_id, COUNT_SHARDS),
                    &[("pending", -1), ("failed", 1)],
                    None,
                )?);
                Lost::Failed
            }
            None => {
                items.push(
                    TransactWriteItem::builder()
                        .update(
                            base.update_expression(
                                "SET nextAttemptAt = :now, workAt = :now, attempts = :attempts REMOVE leaseId, leaseUntil",
                            )
                            .expression_attribute_values(":now", n(now))
                            .build()
                            .map_err(StoreError::ddb)?,
                        )
                        .build(),
                );
                Lost::Requeued
            }
        };
        match self
            .ddb
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(outcome),
            Err(e) if transaction_failed_at(&e).is_some() => Ok(Lost::Skipped),
            Err(e) => Err(StoreError::ddb(e)),
        }
    }

    /// The site's conversions newest first: `limit` rows strictly before
    /// the cursor (`before` and, for rows created in the same millisecond,
    /// `before_event_id`).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_conversions(
        &self,
        site: &str,
        limit: i32,
        before: Option<(i64, Option<&str>)>,
    ) -> Result<Vec<Conversion>, StoreError> {
        let mut q = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .expression_attribute_values(":pk", s(conv_pk(site)))
            .scan_index_forward(false)
            .limit(limit);
        q = match before {
            None => q.key_condition_expression("pk = :pk"),
            Some((at, event)) => q
                .key_condition_expression("pk = :pk AND sk < :before")
                .expression_attribute_values(
                    ":before",
                    // "#" sorts before every hex digit: `before` alone
                    // excludes the whole millisecond.
                    s(format!("{at:013}#{}", event.unwrap_or(""))),
                ),
        };
        let out = q.send().await.map_err(StoreError::ddb)?;
        out.items().iter().map(Conversion::from_item).collect()
    }

    /// The site's counters: totals, and with `from_day` the events Meta
    /// accepted by day from then on (8 queries, one a shard, never a scan:
    /// `day#…` sorts before `total`, so one range reads both).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn conversion_counts(
        &self,
        site: &str,
        from_day: Option<i64>,
    ) -> Result<Counts, StoreError> {
        let from = from_day.map_or_else(|| COUNT_TOTAL_SK.to_owned(), count_day_sk);
        let queries = (0..COUNT_SHARDS).map(|shard| {
            self.ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk >= :from")
                .expression_attribute_values(":pk", s(count_pk(site, shard)))
                .expression_attribute_values(":from", s(&from))
                .consistent_read(true)
                .send()
        });
        let mut counts = Counts::default();
        for out in futures::future::join_all(queries).await {
            let out = out.map_err(StoreError::ddb)?;
            for item in out.items() {
                match get_s(item, SK) {
                    Some(COUNT_TOTAL_SK) => {
                        counts.pending += get_n(item, "pending").unwrap_or(0);
                        counts.sent += get_n(item, "sent").unwrap_or(0);
                        counts.failed += get_n(item, "failed").unwrap_or(0);
                    }
                    Some(sk) => {
                        let Some(day) = parse_count_day_sk(sk) else {
                            continue;
                        };
                        let by_event = counts.days.entry(day).or_default();
                        for e in EventName::ALL {
                            *by_event.entry(e).or_default() += get_n(item, e.as_str()).unwrap_or(0);
                        }
                    }
                    None => {}
                }
            }
        }
        Ok(counts)
    }
}
