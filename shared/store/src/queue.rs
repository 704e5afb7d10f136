//! The sync queue's messages and how they are sent: in batches of ten, the
//! most SQS takes in one call.

use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use serde::{Deserialize, Serialize};

use crate::{Aws, StoreError};

/// One run of one ad account, leased by the dispatcher under `runId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncMessage {
    pub site_id: String,
    pub ad_account_id: String,
    pub run_id: String,
}

impl Aws {
    /// Sends `bodies` to `queue_url`, ten per request. Returns how many
    /// SQS refused (each is retried once in the next request).
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
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                        .map_err(|e| StoreError::service("sqs", e))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = self
                .sqs
                .send_message_batch()
                .queue_url(queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| StoreError::service("sqs", e))?;
            refused += out.failed.len();
        }
        Ok(refused)
    }
}
