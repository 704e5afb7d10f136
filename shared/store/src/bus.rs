//! Events on the stack's EventBridge bus: what happened, never a secret;
//! the entries EventBridge fails on its side put again.

use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use serde_json::Value;

use crate::retry::send_entries;
use crate::{Bus, StoreError};

/// The `source` of every event adtrail puts.
pub const SOURCE: &str = "adtrail";

impl Bus<'_> {
    /// Puts one event of `detail_type` with `detail` on the bus.
    ///
    /// # Errors
    /// [`StoreError::Service`] when EventBridge cannot be reached, and
    /// [`StoreError::Condition`] when it refuses the event.
    pub async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), StoreError> {
        if self
            .put_events(detail_type, std::slice::from_ref(detail))
            .await?
            > 0
        {
            return Err(StoreError::Condition("EventBridge refused the event"));
        }
        tracing::debug!(detail_type, "event put on the bus");
        Ok(())
    }

    /// Puts events of one `detail_type`, ten a request (EventBridge's
    /// most). Entries EventBridge fails on its side (`InternalFailure`,
    /// `ThrottlingException`) go again after a jittered back-off,
    /// [`crate::retry::MAX_ATTEMPTS`] requests at most a batch: the SDK
    /// retries a request that failed, never the failed entries of one that
    /// succeeded. Answers how many EventBridge still refused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when EventBridge cannot be reached.
    pub async fn put_events(
        &self,
        detail_type: &str,
        details: &[Value],
    ) -> Result<usize, StoreError> {
        let mut refused = 0;
        for chunk in details.chunks(10) {
            let entries: Vec<&Value> = chunk.iter().collect();
            refused += send_entries(entries, |pending| async move {
                let batch = pending
                    .iter()
                    .map(|detail| {
                        PutEventsRequestEntry::builder()
                            .event_bus_name(&self.names.bus)
                            .source(SOURCE)
                            .detail_type(detail_type)
                            .detail(detail.to_string())
                            .build()
                    })
                    .collect();
                let out = self
                    .events
                    .put_events()
                    .set_entries(Some(batch))
                    .send()
                    .await
                    .map_err(|e| StoreError::service("eventbridge", e))?;
                // The answer's entries stand in the request's order.
                let results = out.entries();
                let (mut again, mut lost) = (vec![], 0);
                for (i, detail) in pending.into_iter().enumerate() {
                    match results.get(i).and_then(|r| r.error_code()) {
                        None => {}
                        Some("InternalFailure" | "ThrottlingException") => again.push(detail),
                        Some(_) => lost += 1,
                    }
                }
                Ok((again, lost))
            })
            .await?;
        }
        Ok(refused)
    }
}
