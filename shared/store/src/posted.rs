//! Posted events into the outbox: each destination's row goes in the same
//! transaction as its marker (`posted#<siteId>` / `<slug>#<eventId>`), a
//! put that only succeeds once, so a replayed batch, a retried request or
//! two requests racing queue each (destination, event) once. Rows are
//! written many to a transaction (up to DynamoDB's 100 items); a marker
//! that turns out taken cancels its transaction, which is sent again
//! without the rows it names.
//!
//! A batch of [`BATCH_MIN`] rows or more is watched as one: its rows get no
//! `work` index entry of their own (one costs a write unit when the row is
//! queued and another when it is sent); a send batch item
//! (`sendbatch#<siteId>` / `<createdAt>`), written in each of the batch's
//! transactions, stands for them in the index until none is pending, and
//! the sweeper finds a lost send through it ([`crate::recovery`]).

use adtrail_domain::events::EventRow;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};

use crate::attr::{Item, n, s};
use crate::items::{ConversionItem, encode};
use crate::keys::{
    COUNT_SHARDS, PK, SK, WORK_AT, WORK_SHARD, conv_pk, posted_pk, posted_sk, send_batch_pk,
    send_batch_sk, send_shard, shard_of,
};
use crate::outbox::{CHANGE_KEPT_MS, TTL};
use crate::tally::Tally;
use crate::{Conversions, StoreError};

/// Items one transaction takes.
const MAX_TRANSACTION_ITEMS: usize = 100;
/// Rows a request queues from which they are watched through a send batch
/// rather than one index entry each: a batch item costs about five write
/// units in all (its put in a transaction, its index entry, its delete),
/// a row's own entry two.
pub const BATCH_MIN: usize = 4;
/// Rounds of "send again without the taken ones" a write makes at most:
/// each round drops at least one row, and a batch's rows race rarely.
const MAX_ROUNDS: usize = 8;

/// What became of each row of [`Conversions::queue_posted`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Posted {
    /// Written: its message goes on the send queue.
    Queued,
    /// The destination already had this event: nothing written.
    Duplicate,
}

fn put(table: &str, item: Item, condition: &str) -> Result<TransactWriteItem, StoreError> {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(condition)
        .build()
        .map_err(StoreError::ddb)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

/// The send batch of `site`'s rows created at `now`, due in the `work`
/// index at once (the sweeper looks at it once it is late).
fn send_batch(table: &str, site: &str, now: i64) -> Result<Put, StoreError> {
    let sk = send_batch_sk(now);
    Put::builder()
        .table_name(table)
        .item(PK, s(send_batch_pk(site)))
        .item(WORK_SHARD, s(send_shard(&format!("{site}#{sk}"))))
        .item(SK, s(sk))
        .item(WORK_AT, n(now))
        .build()
        .map_err(StoreError::ddb)
}

/// The indexes of the items whose condition failed in a cancelled
/// transaction; `None` for any other failure.
fn taken(err: &SdkError<TransactWriteItemsError>) -> Option<Vec<usize>> {
    let Some(TransactWriteItemsError::TransactionCanceledException(e)) = err.as_service_error()
    else {
        return None;
    };
    let failed: Vec<usize> = e
        .cancellation_reasons()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.code() == Some("ConditionalCheckFailed"))
        .map(|(i, _)| i)
        .collect();
    (!failed.is_empty()).then_some(failed)
}

impl Conversions<'_> {
    /// Writes the rows of posted events, each once per (destination,
    /// event): answers, row by row, whether it was queued now or was
    /// already. Markers are read first (one `BatchGetItem` per 100), so a
    /// replay writes nothing; the rest go in transactions of up to 100
    /// items, two a row and one counter.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails; rows already written
    /// stay written (a retry finds them taken).
    pub async fn queue_posted(
        &self,
        site: &str,
        rows: &[EventRow],
        now: i64,
    ) -> Result<Vec<Posted>, StoreError> {
        let keys = rows
            .iter()
            .map(|r| (posted_pk(site), posted_sk(&r.slug, &r.event_id)))
            .collect();
        let seen: std::collections::HashSet<String> = self
            .batch_read(keys)
            .await?
            .iter()
            .filter_map(|item| crate::attr::get_s(item, SK).map(str::to_owned))
            .collect();
        let mut answers: Vec<Posted> = rows
            .iter()
            .map(|r| {
                if seen.contains(&posted_sk(&r.slug, &r.event_id)) {
                    Posted::Duplicate
                } else {
                    Posted::Queued
                }
            })
            .collect();
        let todo: Vec<usize> = (0..rows.len())
            .filter(|i| answers[*i] == Posted::Queued)
            .collect();
        let batched = todo.len() >= BATCH_MIN;
        // Two items a row, the counters (the site's totals and its day,
        // which also hold each destination's) and the send batch.
        for chunk in todo.chunks((MAX_TRANSACTION_ITEMS - 3) / 2) {
            self.write_rows(site, rows, chunk.to_vec(), &mut answers, batched, now)
                .await?;
        }
        Ok(answers)
    }

    /// One transaction's rows, sent again without those whose marker was
    /// taken meanwhile.
    async fn write_rows(
        &self,
        site: &str,
        rows: &[EventRow],
        mut chunk: Vec<usize>,
        answers: &mut [Posted],
        batched: bool,
        now: i64,
    ) -> Result<(), StoreError> {
        let t = &self.names.table;
        for _ in 0..MAX_ROUNDS {
            if chunk.is_empty() {
                return Ok(());
            }
            let mut items = vec![];
            for &i in &chunk {
                let r = &rows[i];
                let marker: Item = [
                    (PK.to_owned(), s(posted_pk(site))),
                    (SK.to_owned(), s(posted_sk(&r.slug, &r.event_id))),
                    ("ref".to_owned(), s(&r.sk)),
                    (TTL.to_owned(), n((now + CHANGE_KEPT_MS) / 1_000)),
                ]
                .into();
                items.push(put(t, marker, "attribute_not_exists(pk)")?);
                let shard = (!batched).then(|| send_shard(&r.sk));
                let keys = (conv_pk(site), now, shard);
                let row = encode(&ConversionItem::posted(r, site, keys, now), "conversion")?;
                items.push(put(t, row, "attribute_not_exists(pk)")?);
            }
            let mut tally = Tally::default();
            for &i in &chunk {
                let r = &rows[i];
                tally.queued(&r.slug, r.event_name, now, false);
            }
            let shard = shard_of(&rows[chunk[0]].sk, COUNT_SHARDS);
            items.extend(tally.updates(t, site, shard)?);
            if batched {
                // The same item in every transaction of the batch (and of
                // another batch of the site in the same millisecond): a put
                // with no condition.
                items.push(
                    TransactWriteItem::builder()
                        .put(send_batch(t, site, now)?)
                        .build(),
                );
            }
            match self.send_transaction(items).await {
                Ok(_) => return Ok(()),
                Err(e) => {
                    let Some(failed) = taken(&e) else {
                        return Err(StoreError::ddb(e));
                    };
                    // Item 2k and 2k+1 are row k's marker and row.
                    let lost: Vec<usize> = failed.iter().map(|f| chunk[f / 2]).collect();
                    for i in &lost {
                        answers[*i] = Posted::Duplicate;
                    }
                    chunk.retain(|i| !lost.contains(i));
                }
            }
        }
        Err(StoreError::Incomplete {
            operation: "TransactWriteItems",
            left: chunk.len(),
        })
    }
}
