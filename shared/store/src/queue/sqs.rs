//! The queues through SQS: sending messages ten a request (the entries
//! SQS fails on its side sent again), and the visibility change a consumer
//! uses as its retry timer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

use super::{LeadgenMessage, SendMessage, SyncMessage};
use crate::retry::send_entries;
use crate::{Queues, StoreError};

/// The longest visibility timeout SQS takes (12 hours).
const MAX_VISIBILITY_SECS: i64 = 43_200;

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
        match self {
            Visibility::Sqs { queue_url } => {
                queues.delay_message(queue_url, receipt, delay_ms).await?
            }
            Visibility::Recorded { queue_url, delays } => {
                queues.delay_message(queue_url, receipt, delay_ms).await?;
                delays
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(receipt.to_owned(), delay_ms.max(0));
            }
        }
        Ok(())
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

    /// Keeps a received message invisible for `delay_ms` (rounded up to
    /// whole seconds, at most SQS's 12 hours): the message comes back then.
    ///
    /// # Errors
    /// [`StoreError::Service`] when SQS refuses or cannot be reached.
    pub async fn delay_message(
        &self,
        queue_url: &str,
        receipt: &str,
        delay_ms: i64,
    ) -> Result<(), StoreError> {
        let secs = (delay_ms + 999)
            .div_euclid(1_000)
            .clamp(0, MAX_VISIBILITY_SECS);
        self.sqs
            .change_message_visibility()
            .queue_url(queue_url)
            .receipt_handle(receipt)
            .visibility_timeout(secs as i32)
            .send()
            .await
            .map_err(|e| StoreError::service("sqs", e))?;
        Ok(())
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
