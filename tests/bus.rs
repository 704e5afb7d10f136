//! A tap on the stack's bus, as a host would subscribe: an EventBridge rule
//! on every adtrail event, targeting a queue the test reads. Every event
//! taken off the tap is checked against its versioned JSON Schema in
//! `events/schemas/<detail-type>.v1.json`: an event without one, or
//! breaking it, fails the test that caused it.

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
                check_schema(&v);
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

/// The schema of an event's detail type, version 1.
pub fn event_schema(detail_type: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../events/schemas")
        .join(format!("{detail_type}.v1.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{detail_type} has no schema at {}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fails unless the event came from adtrail and its detail keeps its
/// type's schema.
fn check_schema(event: &Value) {
    assert_eq!(event["source"], "adtrail", "{event}");
    let kind = event["detail-type"].as_str().unwrap_or_default();
    let schema = event_schema(kind);
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{kind}'s schema is not a schema: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(&event["detail"])
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{kind} breaks its schema: {errors:?}\n{}",
        event["detail"]
    );
}
