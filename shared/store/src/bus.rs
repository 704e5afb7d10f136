//! Events on the stack's EventBridge bus: what happened, never a secret.

use serde_json::Value;

use crate::{Bus, StoreError};

/// The `source` of every event adtrail puts.
pub const SOURCE: &str = "adtrail";

impl Bus<'_> {
    /// Puts one event of `detail_type` with `detail` on the bus.
    ///
    /// # Errors
    /// [`StoreError::Service`] when EventBridge cannot be reached or refuses.
    pub async fn put_event(&self, detail_type: &str, detail: &Value) -> Result<(), StoreError> {
        let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
            .event_bus_name(&self.names.bus)
            .source(SOURCE)
            .detail_type(detail_type)
            .detail(detail.to_string())
            .build();
        let out = self
            .events
            .put_events()
            .entries(entry)
            .send()
            .await
            .map_err(|e| StoreError::service("eventbridge", e))?;
        if out.failed_entry_count > 0 {
            return Err(StoreError::Condition("EventBridge refused the event"));
        }
        tracing::debug!(detail_type, "event put on the bus");
        Ok(())
    }

    /// Puts events of one `detail_type`, ten a request (EventBridge's
    /// most). Answers how many EventBridge refused.
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
            let entries = chunk
                .iter()
                .map(|detail| {
                    aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
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
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| StoreError::service("eventbridge", e))?;
            refused += out.failed_entry_count as usize;
        }
        Ok(refused)
    }
}
