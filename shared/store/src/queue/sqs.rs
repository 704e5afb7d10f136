//! The queues through SQS: sending messages ten a request (the entries
//! SQS fails on its side sent again), and the visibility change a consumer
//! uses as its retry timer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aws_sdk_sqs::types::{ChangeMessageVisibilityBatchRequestEntry, SendMessageBatchRequestEntry};
use futures::StreamExt;

use super::{LeadgenMessage, SendMessage, SyncMessage};
use crate::retry::send_entries;
use crate::{Queues, StoreError};

/// The longest visibility timeout SQS takes (12 hours).
const MAX_VISIBILITY_SECS: i64 = 43_200;
/// The most entries an SQS batch request takes.
const BATCH_ENTRIES: usize = 10;
/// Visibility batches in flight at once.
const CHANGES_AT_ONCE: usize = 8;

/// Why a hold was not asked for.
const OUT_OF_TIME: &str = "not asked: the invocation's time ran out";

/// A delay as SQS takes it: whole seconds, rounded up, at most 12 hours.
fn visibility_secs(delay_ms: i64) -> i32 {
    (delay_ms + 999)
        .div_euclid(1_000)
        .clamp(0, MAX_VISIBILITY_SECS) as i32
}

fn bodies<T: serde::Serialize>(messages: &[T]) -> Result<Vec<String>, StoreError> {
    messages
        .iter()
        .map(|m| serde_json::to_string(m).map_err(|e| StoreError::Malformed(e.to_string())))
        .collect()
}

/// How a message kept for later comes back.
#[derive(Debug, Clone)]
pub enum Visibility {
    /// In AWS: `ChangeMessageVisibility` on the consumer's queue.
    Sqs { queue_url: String },
    /// Under the local runner, which plays SQS's timer on its own (possibly
    /// virtual) clock: the same `ChangeMessageVisibility` (so the role is
    /// proven to allow it), and each delay recorded by receipt handle for
    /// the runner to honour.
    Recorded {
        queue_url: String,
        delays: Arc<Mutex<HashMap<String, i64>>>,
    },
}

impl Visibility {
    /// Keeps the message invisible for `delay_ms`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS refuses the change.
    pub async fn hold(
        &self,
        queues: Queues<'_>,
        receipt: &str,
        delay_ms: i64,
    ) -> Result<(), StoreError> {
        let held = self.hold_all(queues, &[(receipt, delay_ms)], None).await;
        match held.into_iter().next() {
            Some(Err(why)) => Err(StoreError::Service {
                service: "sqs",
                detail: why.clone(),
                transient: false,
                source: why.into(),
            }),
            _ => Ok(()),
        }
    }

    /// Keeps each message invisible for its own delay, ten a request
    /// ([`Queues::delay_messages`]), none started past `stop`. Answers,
    /// per hold in order, whether SQS took it; one it did not comes back
    /// after the queue's own timeout.
    pub async fn hold_all(
        &self,
        queues: Queues<'_>,
        holds: &[(&str, i64)],
        stop: Option<Instant>,
    ) -> Vec<Result<(), String>> {
        match self {
            Visibility::Sqs { queue_url } => queues.delay_messages(queue_url, holds, stop).await,
            Visibility::Recorded { queue_url, delays } => {
                let held = queues.delay_messages(queue_url, holds, stop).await;
                let mut delays = delays.lock().unwrap_or_else(|e| e.into_inner());
                for ((receipt, delay_ms), held) in holds.iter().zip(&held) {
                    if held.is_ok() {
                        delays.insert((*receipt).to_owned(), (*delay_ms).max(0));
                    }
                }
                held
            }
        }
    }
}

impl Queues<'_> {
    /// Puts sync runs on the sync queue. Answers how many SQS refused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS cannot be reached.
    pub async fn enqueue_syncs(&self, messages: &[SyncMessage]) -> Result<usize, StoreError> {
        self.send_batch(&self.names.sync_queue_url, &bodies(messages)?)
            .await
    }

    /// Puts send messages on the send queue. Answers how many SQS refused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS cannot be reached.
    pub async fn enqueue_sends(&self, messages: &[SendMessage]) -> Result<usize, StoreError> {
        self.send_batch(&self.names.send_queue_url, &bodies(messages)?)
            .await
    }

    /// Puts form leads on the leadgen queue. Answers how many SQS refused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS cannot be reached, or
    /// [`StoreError::Malformed`] when the stack has no leadgen queue.
    pub async fn enqueue_leadgen(&self, messages: &[LeadgenMessage]) -> Result<usize, StoreError> {
        let Some(url) = self.names.leadgen_queue_url.as_deref() else {
            return Err(StoreError::Malformed(
                "the stack has no leadgen queue".into(),
            ));
        };
        self.send_batch(url, &bodies(messages)?).await
    }

    /// Keeps received messages invisible, each for its delay (rounded up
    /// to whole seconds, at most SQS's 12 hours), ten a
    /// `ChangeMessageVisibilityBatch` ([`CHANGES_AT_ONCE`] requests at
    /// once): a batch handed back near a deadline may hold thousands, one
    /// request each would outlast it and cost ten times the requests. An
    /// entry SQS fails on its side goes again after a back-off, as a
    /// send's does ([`send_entries`]). Answers, per hold in order, `Ok` or
    /// why SQS did not take it (a receipt no longer valid, SQS
    /// unreachable, or `stop` come before its request started): that
    /// message comes back after the queue's timeout.
    pub async fn delay_messages(
        &self,
        queue_url: &str,
        holds: &[(&str, i64)],
        stop: Option<Instant>,
    ) -> Vec<Result<(), String>> {
        // The futures made first, then driven: a stream mapping a closure
        // over borrowed holds is not `Send` for every lifetime, which the
        // local API's router requires of its handlers.
        let requests: Vec<_> = holds
            .chunks(BATCH_ENTRIES)
            .map(|chunk| async move {
                if stop.is_some_and(|stop| Instant::now() >= stop) {
                    return vec![Err(OUT_OF_TIME.to_owned()); chunk.len()];
                }
                self.delay_chunk(queue_url, chunk).await
            })
            .collect();
        // In order (several in flight): the answers line up with `holds`.
        let answered: Vec<Vec<Result<(), String>>> = futures::stream::iter(requests)
            .buffered(CHANGES_AT_ONCE)
            .collect()
            .await;
        answered.into_iter().flatten().collect()
    }

    /// Up to ten holds in one request, its entries SQS failed on its side
    /// sent again.
    async fn delay_chunk(&self, queue_url: &str, chunk: &[(&str, i64)]) -> Vec<Result<(), String>> {
        // Each entry's latest answer: one SQS failed and then took is Ok.
        let held = Mutex::new(vec![Ok(()); chunk.len()]);
        let entries: Vec<usize> = (0..chunk.len()).collect();
        let held_ref = &held;
        let sent = send_entries(entries, |pending| async move {
            let batch = pending
                .iter()
                .map(|k| {
                    let (receipt, delay_ms) = chunk[*k];
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(k.to_string())
                        .receipt_handle(receipt)
                        .visibility_timeout(visibility_secs(delay_ms))
                        .build()
                        .map_err(|e| StoreError::service("sqs", e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .sqs
                .change_message_visibility_batch()
                .queue_url(queue_url)
                .set_entries(Some(batch))
                .send()
                .await
                .map_err(|e| StoreError::service("sqs", e))?;
            let mut held = held_ref.lock().unwrap_or_else(|e| e.into_inner());
            for k in &pending {
                held[*k] = Ok(());
            }
            let mut again = vec![];
            let mut refused = 0;
            for f in &out.failed {
                let Some(k) = f.id().parse::<usize>().ok().filter(|k| pending.contains(k)) else {
                    continue;
                };
                held[k] = Err(format!("{}: {}", f.code(), f.message().unwrap_or("")));
                // A sender's fault (a receipt no longer valid) is refused
                // for good; SQS's own goes again.
                if f.sender_fault() {
                    refused += 1;
                } else {
                    again.push(k);
                }
            }
            Ok::<_, StoreError>((again, refused))
        })
        .await;
        match sent {
            Err(error) => vec![Err(error.to_string()); chunk.len()],
            Ok(_) => held.into_inner().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// Sends `bodies` to `queue_url`, ten per request. Entries SQS fails
    /// on its side (`SenderFault: false`, such as `InternalError`) go again
    /// after a jittered back-off, [`crate::retry::MAX_ATTEMPTS`] requests
    /// at most a batch: the SDK retries a request that failed, never the
    /// failed entries of one that succeeded. Returns how many SQS still
    /// refused; each caller says what becomes of them.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS cannot be reached.
    pub async fn send_batch(
        &self,
        queue_url: &str,
        bodies: &[String],
    ) -> Result<usize, StoreError> {
        let mut refused = 0;
        for chunk in bodies.chunks(10) {
            let entries: Vec<(String, &String)> = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| (i.to_string(), body))
                .collect();
            refused += send_entries(entries, |pending| async move {
                let batch = pending
                    .iter()
                    .map(|(id, body)| {
                        SendMessageBatchRequestEntry::builder()
                            .id(id)
                            .message_body(*body)
                            .build()
                            .map_err(|e| StoreError::service("sqs", e))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let out = self
                    .sqs
                    .send_message_batch()
                    .queue_url(queue_url)
                    .set_entries(Some(batch))
                    .send()
                    .await
                    .map_err(|e| StoreError::service("sqs", e))?;
                // A sender's fault is refused for good; SQS's own goes again.
                let (theirs, ours): (Vec<_>, Vec<_>) =
                    out.failed.iter().partition(|f| !f.sender_fault());
                let again = pending
                    .into_iter()
                    .filter(|(id, _)| theirs.iter().any(|f| f.id() == id))
                    .collect();
                Ok((again, ours.len()))
            })
            .await?;
        }
        Ok(refused)
    }
}
