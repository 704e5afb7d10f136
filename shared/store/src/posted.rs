//! Posted events into the outbox, each once per (destination, event).
//!
//! Each row's marker (`posted#<siteId>` / `<slug>#<eventId>`, naming the
//! row's key) is taken first by a conditional `PutItem` of its own, so a
//! replayed batch, a retried request or two requests racing queue each
//! (destination, event) once. The rows follow: a few, each put on its own
//! and marked `uncounted`, counted later by the sender that ends its first
//! attempt, in the counter transaction it writes once a batch
//! ([`crate::receipts`]); a batch, counted first and then put one by one
//! ([`batch`]). Nothing here is in a transaction with its counters because
//! a transaction bills each item twice: a row on its own costs one write
//! unit, in a transaction two, and the site's two counter items four more.
//! A row posted on its own therefore shows in `pending` and in its day's
//! `queued` from the end of its first attempt, seconds after it is posted.
//!
//! A writer can stop between its markers and its rows (a crash, a timeout,
//! DynamoDB refusing a write). Its markers then name rows that do
//! not exist, and its request failed, so its client sends it again. A
//! request that finds a marker therefore reads the row the marker names,
//! and writes that row itself, at that key, when it is missing. A writer
//! still at work writes the same key, so one of the two puts wins and the
//! other finds the row taken: the event is queued once either way.
//! Conversion rows of posted events are never deleted while their site
//! lives, so a missing row always means a writer that did not finish. A
//! row there and still pending may never have reached the send queue (its
//! request failed before queuing it): its message goes again.
//!
//! A batch of [`BATCH_MIN`] rows or more is watched as one: its rows get no
//! `work` index entry of their own (one costs a write unit when the row is
//! queued and another when it is sent); a send batch item
//! (`sendbatch#<siteId>` / `<createdAt>`) stands for them in the index until
//! none is pending, and the sweeper finds a lost send through it
//! ([`crate::recovery`]). Its rows are counted with it and then written
//! outside any transaction ([`batch`]). A row written at another writer's
//! key keeps its own entry unless that writer's batch counted it.

use std::collections::HashMap;

use adtrail_domain::capi::{ConversionStatus, parse_conversion_ref};
use adtrail_domain::events::EventRow;

mod batch;

pub(crate) use batch::{ROWS, UNLIST_AT_ONCE};
use futures::StreamExt;

use crate::attr::{get_s, n, s};
use crate::items::{ConversionItem, encode};
use crate::keys::{PK, SK, conv_pk, posted_pk, posted_sk, send_shard};
use crate::outbox::{CHANGE_KEPT_MS, TTL};
use crate::write::applied;
use crate::{Conversions, StoreError};

/// Rows a request queues from which they are watched through a send batch
/// rather than one index entry each: a batch item costs about five write
/// units in all (its put in a transaction, its index entry, its delete),
/// a row's own entry two.
pub const BATCH_MIN: usize = 4;
/// Markers or rows put at once.
const PUTS_AT_ONCE: usize = 16;
/// The marker's attribute naming its row's key.
const REF: &str = "ref";

/// What became of each row of [`Conversions::queue_posted`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Posted {
    /// Written, at this key: its message goes on the send queue.
    Queued(String),
    /// The destination already had this event: nothing written.
    Duplicate,
    /// The destination already had this event, not sent yet: nothing
    /// written, and its message goes on the send queue again (a request
    /// that failed after writing the row may not have put it there; a
    /// message too many finds the row taken or sent).
    Unsent(String),
}

/// A row to write: which of the request's, at which key, created when.
#[derive(Debug, Clone)]
struct RowWrite {
    index: usize,
    sk: String,
    created_at: i64,
}

/// The item of `w`'s row: watched through its send batch (counted with
/// it), or with a `work` entry of its own and `uncounted`.
fn row_item(
    rows: &[EventRow],
    site: &str,
    w: &RowWrite,
    in_send_batch: bool,
    now: i64,
) -> Result<crate::attr::Item, StoreError> {
    let row = EventRow {
        sk: w.sk.clone(),
        ..rows[w.index].clone()
    };
    let shard = (!in_send_batch).then(|| send_shard(&w.sk));
    let keys = (conv_pk(site), w.created_at, shard);
    let mut item = ConversionItem::posted(&row, site, keys, now);
    item.uncounted = !in_send_batch;
    encode(&item, "conversion")
}

impl Conversions<'_> {
    /// Writes the rows of posted events, each once per (destination,
    /// event): answers, row by row, whether it was queued now (and at which
    /// key) or was already. Each marker is put on its own, so a replay
    /// writes no row; a few rows are each put on its own, uncounted; a
    /// batch's are counted with their send batch and put one by one.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails; markers and rows
    /// already written stay written (a retry finds them, and writes the
    /// rows their markers name if they are missing).
    pub async fn queue_posted(
        &self,
        site: &str,
        rows: &[EventRow],
        now: i64,
    ) -> Result<Vec<Posted>, StoreError> {
        let mut answers = vec![Posted::Duplicate; rows.len()];
        // Every marker is put at once, with no read first: a read finds
        // nothing for a new event yet costs half a unit a key, and a
        // marker already there (a replay, or another writer meanwhile)
        // fails its put (a write unit) and is then read strongly. At
        // on-demand prices that is cheaper while fewer than about one
        // event in twelve is a replay.
        let fresh: Vec<usize> = (0..rows.len()).collect();
        let lost = self.put_markers(site, rows, &fresh, now).await?;
        let refs = if lost.is_empty() {
            HashMap::new()
        } else {
            self.markers(site, rows, &lost).await?
        };
        let mut adopt: Vec<usize> = refs.keys().copied().collect();
        adopt.sort_unstable();
        let fresh: Vec<RowWrite> = fresh
            .into_iter()
            .filter(|i| !lost.contains(i))
            .map(|index| RowWrite {
                index,
                sk: rows[index].sk.clone(),
                created_at: now,
            })
            .collect();
        let adopted = self.unfinished(site, &refs, &adopt, &mut answers).await?;
        let (listed, mut writes) = self.listed(site, rows, adopted).await?;
        for w in listed {
            match self.write_listed(site, rows, &w, now).await? {
                Some(outcome) => answers[w.index] = outcome,
                // No longer counted: written uncounted, with an entry of its own.
                None => writes.push(w),
            }
        }
        if fresh.len() >= BATCH_MIN {
            self.write_batch(site, rows, &fresh, &mut answers, now)
                .await?;
        } else {
            writes.extend(fresh);
        }
        self.write_rows(site, rows, writes, &mut answers, now)
            .await?;
        Ok(answers)
    }

    /// The row key each of `indexes`' markers names, for those that exist,
    /// read strongly: a marker whose put just failed is there to be read.
    async fn markers(
        &self,
        site: &str,
        rows: &[EventRow],
        indexes: &[usize],
    ) -> Result<HashMap<usize, String>, StoreError> {
        let keys = indexes
            .iter()
            .map(|i| {
                (
                    posted_pk(site),
                    posted_sk(&rows[*i].slug, &rows[*i].event_id),
                )
            })
            .collect();
        let by_sk: HashMap<String, String> = self
            .batch_read_as(keys, true)
            .await?
            .iter()
            .filter_map(|item| Some((get_s(item, SK)?.to_owned(), get_s(item, REF)?.to_owned())))
            .collect();
        Ok(indexes
            .iter()
            .filter_map(|i| {
                let r = &rows[*i];
                let sk = by_sk.get(&posted_sk(&r.slug, &r.event_id))?;
                Some((*i, sk.clone()))
            })
            .collect())
    }

    /// Puts each row's marker, naming the row's own key, if nobody has:
    /// answers the rows whose marker another writer put first.
    async fn put_markers(
        &self,
        site: &str,
        rows: &[EventRow],
        indexes: &[usize],
        now: i64,
    ) -> Result<Vec<usize>, StoreError> {
        let puts: Vec<(usize, Result<bool, StoreError>)> = futures::stream::iter(indexes.to_vec())
            .map(|i| async move {
                let r = &rows[i];
                let put = self
                    .ddb
                    .put_item()
                    .table_name(&self.names.table)
                    .item(PK, s(posted_pk(site)))
                    .item(SK, s(posted_sk(&r.slug, &r.event_id)))
                    .item(REF, s(&r.sk))
                    .item(TTL, n((now + CHANGE_KEPT_MS) / 1_000))
                    .condition_expression("attribute_not_exists(pk)")
                    .send()
                    .await;
                (i, applied(put).map(|out| out.is_some()))
            })
            .buffer_unordered(PUTS_AT_ONCE)
            .collect()
            .await;
        let mut lost = vec![];
        for (i, put) in puts {
            if !put? {
                lost.push(i);
            }
        }
        Ok(lost)
    }

    /// Of the rows whose marker was there, those whose row is not: their
    /// writer stopped before it (or is still at work), and the row is
    /// written at the key the marker names. A row there and still pending
    /// is answered [`Posted::Unsent`].
    async fn unfinished(
        &self,
        site: &str,
        refs: &HashMap<usize, String>,
        indexes: &[usize],
        answers: &mut [Posted],
    ) -> Result<Vec<RowWrite>, StoreError> {
        let keys = indexes
            .iter()
            .map(|i| (conv_pk(site), refs[i].clone()))
            .collect();
        // Each row there, and whether it is still pending.
        let written: HashMap<String, bool> = self
            .batch_read(keys)
            .await?
            .iter()
            .filter_map(|item| {
                let pending = get_s(item, "status") == Some(ConversionStatus::Pending.as_str());
                Some((get_s(item, SK)?.to_owned(), pending))
            })
            .collect();
        let mut writes = vec![];
        for &index in indexes {
            let sk = &refs[&index];
            if let Some(pending) = written.get(sk) {
                if *pending {
                    answers[index] = Posted::Unsent(sk.clone());
                }
                continue;
            }
            let Some((created_at, _)) = parse_conversion_ref(sk) else {
                return Err(StoreError::Malformed(format!(
                    "a posted marker names no row key: {sk}"
                )));
            };
            writes.push(RowWrite {
                index,
                sk: sk.clone(),
                created_at,
            });
        }
        Ok(writes)
    }

    /// Rows with no send batch: each put on its own, conditional on its
    /// key and marked `uncounted` (one write unit where a row in a
    /// transaction with the counters cost two, and the counters four
    /// more). The first sender to end an attempt of it counts it queued
    /// in the counter transaction it writes once a batch
    /// ([`crate::receipts`]). A row another writer put first stays as it
    /// answered: [`Posted::Duplicate`].
    async fn write_rows(
        &self,
        site: &str,
        rows: &[EventRow],
        writes: Vec<RowWrite>,
        answers: &mut [Posted],
        now: i64,
    ) -> Result<(), StoreError> {
        let puts: Vec<(RowWrite, Result<bool, StoreError>)> = futures::stream::iter(writes)
            .map(|w| async move {
                let put = async {
                    let put = self
                        .ddb
                        .put_item()
                        .table_name(&self.names.table)
                        .set_item(Some(row_item(rows, site, &w, false, now)?))
                        .condition_expression("attribute_not_exists(pk)")
                        .send()
                        .await;
                    applied(put).map(|out| out.is_some())
                };
                let put = put.await;
                (w, put)
            })
            .buffer_unordered(PUTS_AT_ONCE)
            .collect()
            .await;
        for (w, put) in puts {
            if put? {
                answers[w.index] = Posted::Queued(w.sk);
            }
        }
        Ok(())
    }
}
