//! A tap on the stack's bus, as a host would subscribe: an EventBridge rule
//! on every adtrail event, targeting a queue the test reads.

use serde_json::Value;

use crate::Harness;

/// The tap's queue.
pub struct BusTap {
    queue_url: String,
}

/// One event the bus delivered: its detail type and detail.
#[derive(Debug, Clone)]
pub struct TappedEvent {
    pub detail_type: String,
    pub detail: Value,
    /// The whole event as the rule delivered it.
    pub raw: String,
}

impl Harness {
    /// Subscribes a queue to every adtrail event on the bus.
    pub async fn tap_bus(&self) -> BusTap {
        let store = self.store();
        let queue_url = store
            .sqs
            .create_queue()
            .queue_name(format!("{}-tap", store.names.bus))
            .send()
            .await
            .expect("the tap queue")
            .queue_url
            .expect("its url");
        let arn = store
            .sqs
            .get_queue_attributes()
            .queue_url(&queue_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("the tap's arn")
            .attributes
            .expect("attributes")[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
            .clone();
        store
            .events
            .put_rule()
            .name("tap")
            .event_bus_name(&store.names.bus)
            .event_pattern(r#"{"source":["adtrail"]}"#)
            .send()
            .await
            .expect("the tap rule");
        let target = aws_sdk_eventbridge::types::Target::builder()
            .id("q")
            .arn(arn)
            .build()
            .expect("a target");
        store
            .events
            .put_targets()
            .rule("tap")
            .event_bus_name(&store.names.bus)
            .targets(target)
            .send()
            .await
            .expect("the tap target");
        BusTap { queue_url }
    }
}

impl BusTap {
    /// Every event delivered since the last call, taken off the tap.
    pub async fn take(&self, h: &Harness) -> Vec<TappedEvent> {
        let sqs = &h.store().sqs;
        let mut events = vec![];
        loop {
            let out = sqs
                .receive_message()
                .queue_url(&self.queue_url)
                .max_number_of_messages(10)
                .send()
                .await
                .expect("receive from the tap");
            let batch = out.messages.unwrap_or_default();
            if batch.is_empty() {
                return events;
            }
            for m in batch {
                let raw = m.body.unwrap_or_default();
                let v: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
                events.push(TappedEvent {
                    detail_type: v["detail-type"].as_str().unwrap_or("").to_owned(),
                    detail: v["detail"].clone(),
                    raw,
                });
                sqs.delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(m.receipt_handle.unwrap_or_default())
                    .send()
                    .await
                    .expect("delete from the tap");
            }
        }
    }
}
