//! A posted batch's rows, written outside any transaction.
//!
//! A batch of [`super::BATCH_MIN`] rows or more is counted first: the
//! counters move in one transaction with the send batch item, which lists
//! every row it counted (`rows`, a member a row:
//! [`crate::keys::send_batch_member`]). Each row then goes by a plain
//! conditional put, one write unit where a row inside the counters'
//! transaction cost two.
//!
//! A writer that stops between the two leaves rows counted and missing,
//! and markers naming them. A retry of its request finds the markers
//! ([`super`]) and writes each missing row the batch lists without counting
//! it again, taking it off the list in the same transaction; a row the
//! list no longer holds is written as a row posted on its own (uncounted,
//! counted by the end of its first attempt). A request
//! that is never sent again leaves rows counted that will never be: the
//! sweeper, once the batch is late (long after any writer of it could
//! still run), takes back the counting of the listed rows it does not
//! find and takes them off the list ([`crate::recovery`]).

use std::collections::{HashMap, HashSet};

use adtrail_domain::events::EventRow;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use futures::StreamExt;

use crate::attr::{get_s, n, s};
use crate::keys::{
    COUNT_SHARDS, PK, SK, send_batch_member, send_batch_pk, send_batch_sk, send_shard, shard_of,
};
use crate::tally::Tally;
use crate::write::{applied, transaction_failed_at};
use crate::{Conversions, StoreError};

use super::{PUTS_AT_ONCE, Posted, RowWrite, row_item};

/// The send batch's list of the rows its writer counted.
pub(crate) const ROWS: &str = "rows";

/// The member of `w`'s row in its send batch's list.
fn member(rows: &[EventRow], w: &RowWrite) -> String {
    let r = &rows[w.index];
    send_batch_member(&w.sk, &r.slug, r.event_name.as_str())
}

impl Conversions<'_> {
    /// Counts `writes` (all created `now`) with their send batch's list,
    /// then puts each row; answers each row's outcome in `answers`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails: rows counted and not
    /// written are written by a retry of the request.
    pub(super) async fn write_batch(
        &self,
        site: &str,
        rows: &[EventRow],
        writes: &[RowWrite],
        answers: &mut [Posted],
        now: i64,
    ) -> Result<(), StoreError> {
        let Some(first) = writes.first() else {
            return Ok(());
        };
        let t = &self.names.table;
        let mut tally = Tally::default();
        for w in writes {
            let r = &rows[w.index];
            tally.queued(&r.slug, r.event_name, now, false);
        }
        let members: Vec<String> = writes.iter().map(|w| member(rows, w)).collect();
        let sk = send_batch_sk(now);
        // The same item for every request of the site in this millisecond:
        // each adds its members.
        let batch = Update::builder()
            .table_name(t)
            .key(PK, s(send_batch_pk(site)))
            .key(SK, s(&sk))
            .update_expression(
                "SET workShard = :shard, workAt = if_not_exists(workAt, :now) ADD #rows :members",
            )
            .expression_attribute_names("#rows", ROWS)
            .expression_attribute_values(":shard", s(send_shard(&format!("{site}#{sk}"))))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":members", AttributeValue::Ss(members))
            .build()
            .map_err(StoreError::ddb)?;
        let mut items = vec![TransactWriteItem::builder().update(batch).build()];
        items.extend(tally.updates(t, site, shard_of(&first.sk, COUNT_SHARDS))?);
        self.send_transaction(items)
            .await
            .map_err(StoreError::ddb)?;
        let puts: Vec<(usize, Result<bool, StoreError>)> =
            futures::stream::iter((0..writes.len()).collect::<Vec<_>>())
                .map(|k| async move {
                    let w = &writes[k];
                    let put = async {
                        let item = row_item(rows, site, w, true, now)?;
                        let out = self
                            .ddb
                            .put_item()
                            .table_name(&self.names.table)
                            .set_item(Some(item))
                            .condition_expression("attribute_not_exists(pk)")
                            .send()
                            .await;
                        Ok(applied(out)?.is_some())
                    };
                    (k, put.await)
                })
                .buffer_unordered(PUTS_AT_ONCE)
                .collect()
                .await;
        for (k, put) in puts {
            let w = &writes[k];
            // Taken: a retry of this request wrote it first, from the
            // list, without counting it again.
            answers[w.index] = if put? {
                Posted::Queued(w.sk.clone())
            } else {
                Posted::Duplicate
            };
        }
        Ok(())
    }

    /// Of `writes` (rows whose marker is there and whose row is not), those
    /// their send batch lists as counted, and the others.
    pub(super) async fn listed(
        &self,
        site: &str,
        rows: &[EventRow],
        writes: Vec<RowWrite>,
    ) -> Result<(Vec<RowWrite>, Vec<RowWrite>), StoreError> {
        if writes.is_empty() {
            return Ok((vec![], vec![]));
        }
        let times: HashSet<i64> = writes.iter().map(|w| w.created_at).collect();
        let keys = times
            .iter()
            .map(|at| (send_batch_pk(site), send_batch_sk(*at)))
            .collect();
        let lists: HashMap<String, Vec<String>> = self
            .batch_read(keys)
            .await?
            .iter()
            .filter_map(|item| {
                let list = item.get(ROWS)?.as_ss().ok()?.clone();
                Some((get_s(item, SK)?.to_owned(), list))
            })
            .collect();
        Ok(writes.into_iter().partition(|w| {
            lists
                .get(&send_batch_sk(w.created_at))
                .is_some_and(|list| list.contains(&member(rows, w)))
        }))
    }

    /// Writes a row its send batch counted and its writer never wrote,
    /// taking it off the list in the same transaction. Answers `None` when
    /// the list no longer holds it (the sweeper took its counting back: it
    /// is to be counted again), else its outcome.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(super) async fn write_listed(
        &self,
        site: &str,
        rows: &[EventRow],
        w: &RowWrite,
        now: i64,
    ) -> Result<Option<Posted>, StoreError> {
        let t = &self.names.table;
        let m = member(rows, w);
        let unlist = Update::builder()
            .table_name(t)
            .key(PK, s(send_batch_pk(site)))
            .key(SK, s(send_batch_sk(w.created_at)))
            .update_expression("DELETE #rows :m")
            .condition_expression("contains(#rows, :one)")
            .expression_attribute_names("#rows", ROWS)
            .expression_attribute_values(":m", AttributeValue::Ss(vec![m.clone()]))
            .expression_attribute_values(":one", s(m))
            .build()
            .map_err(StoreError::ddb)?;
        let put = Put::builder()
            .table_name(t)
            .set_item(Some(row_item(rows, site, w, true, now)?))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(StoreError::ddb)?;
        let items = vec![
            TransactWriteItem::builder().update(unlist).build(),
            TransactWriteItem::builder().put(put).build(),
        ];
        match self.send_transaction(items).await {
            Ok(_) => Ok(Some(Posted::Queued(w.sk.clone()))),
            Err(e) => match transaction_failed_at(&e) {
                Some(0) => Ok(None),
                Some(_) => Ok(Some(Posted::Duplicate)),
                None => Err(StoreError::ddb(e)),
            },
        }
    }
}

/// Members a look takes off a list at most: each is a `contains` in the
/// update's condition, which DynamoDB caps at 4 KB.
pub(crate) const UNLIST_AT_ONCE: usize = 100;

impl Conversions<'_> {
    /// Takes back the counting of `missing`, members of the send batch
    /// `batch` of `site` whose rows were never written (their writer
    /// stopped, and its request was not sent again in time), and takes
    /// them off its list: all in one transaction, conditional on each
    /// still being listed (a retry that wrote one meanwhile took it off).
    /// Answers whether it did; at most [`UNLIST_AT_ONCE`] members a call.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn uncount_unwritten(
        &self,
        site: &str,
        batch: &str,
        created_at: i64,
        missing: &[String],
    ) -> Result<bool, StoreError> {
        let t = &self.names.table;
        let missing = &missing[..missing.len().min(UNLIST_AT_ONCE)];
        let mut tally = Tally::default();
        let mut update = Update::builder()
            .table_name(t)
            .key(PK, s(send_batch_pk(site)))
            .key(SK, s(batch))
            .update_expression("DELETE #rows :missing")
            .expression_attribute_names("#rows", ROWS)
            .expression_attribute_values(":missing", AttributeValue::Ss(missing.to_vec()));
        let mut condition = vec![];
        for (i, m) in missing.iter().enumerate() {
            let Some((slug, event)) = crate::keys::parse_send_batch_member(m) else {
                return Err(StoreError::Malformed(format!(
                    "a send batch lists a malformed row: {m}"
                )));
            };
            let event = adtrail_domain::capi::EventName::parse(event).ok_or_else(|| {
                StoreError::Malformed(format!("a send batch lists an unknown event: {m}"))
            })?;
            tally.queued(slug, event, created_at, false);
            condition.push(format!("contains(#rows, :m{i})"));
            update = update.expression_attribute_values(format!(":m{i}"), s(m));
        }
        let update = update
            .condition_expression(condition.join(" AND "))
            .build()
            .map_err(StoreError::ddb)?;
        let mut items = vec![TransactWriteItem::builder().update(update).build()];
        let shard = shard_of(batch, COUNT_SHARDS);
        items.extend(tally.negated().updates(t, site, shard)?);
        Ok(self.transact(items).await?.is_none())
    }
}
