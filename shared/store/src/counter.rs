//! An SDK interceptor that counts the requests sent to each service, so the
//! benchmarks report DynamoDB requests per unit of work from the client's
//! own view rather than an estimate; and, for DynamoDB, the read and write
//! request units each request would consume in AWS, from the sizes of the
//! items it writes and reads (moto reports none): what the cost figures
//! multiply by AWS's prices.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};

/// Requests sent, by service, and DynamoDB's request units. Clones share
/// the counts.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(
    Arc<Mutex<BTreeMap<&'static str, u64>>>,
    Arc<Mutex<units::Units>>,
);

impl RequestCounter {
    pub fn for_service(&self, service: &'static str) -> ServiceCounter {
        ServiceCounter {
            service,
            counts: self.clone(),
        }
    }
    pub fn get(&self, service: &str) -> u64 {
        self.0
            .lock()
            .map(|m| m.get(service).copied().unwrap_or(0))
            .unwrap_or(0)
    }
    pub fn reset(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
        if let Ok(mut u) = self.1.lock() {
            u.restart();
        }
    }
    /// DynamoDB's write request units so far (a transaction's count twice).
    pub fn write_units(&self) -> f64 {
        self.1.lock().map(|u| u.write).unwrap_or(0.0)
    }
    /// DynamoDB's read request units so far (eventually consistent reads
    /// count half).
    pub fn read_units(&self) -> f64 {
        self.1.lock().map(|u| u.read).unwrap_or(0.0)
    }
    /// The largest item written so far (put, or grown by an update), in
    /// DynamoDB's bytes.
    pub fn largest_item(&self) -> usize {
        self.1.lock().map(|u| u.largest_item).unwrap_or(0)
    }
    /// DynamoDB's units so far by what spent them (`TxPut conv`, `Query
    /// index due`, …): write units, read units, requests.
    pub fn units_by(&self) -> BTreeMap<String, (f64, f64, u64)> {
        self.1.lock().map(|u| u.by.clone()).unwrap_or_default()
    }
}

mod sizes;
mod units;

/// The count of SQS receives that returned no message (also counted under
/// `sqs`): what an event source's pollers do all day, whatever the
/// traffic, so the cost bench prices them once, as the idle stack's.
pub const EMPTY_RECEIVES: &str = "sqs-empty-receives";

/// Marks a request as an SQS receive, for its answer to be looked at.
#[derive(Debug, Clone, Copy)]
struct Receive;

impl Storable for Receive {
    type Storer = StoreReplace<Self>;
}

/// Whether a `ReceiveMessage` answer (JSON) holds a message.
fn received_messages(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("Messages")
                .and_then(|m| m.as_array())
                .map(|m| !m.is_empty())
        })
        .unwrap_or(false)
}

/// The interceptor for one service's client.
#[derive(Debug, Clone)]
pub struct ServiceCounter {
    service: &'static str,
    counts: RequestCounter,
}

impl Intercept for ServiceCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Ok(mut m) = self.counts.0.lock() {
            *m.entry(self.service).or_default() += 1;
        }
        if self.service == "sqs"
            && context
                .request()
                .headers()
                .get("x-amz-target")
                .is_some_and(|t| t.ends_with(".ReceiveMessage"))
        {
            cfg.interceptor_state().store_put(Receive);
        }
        if self.service == "dynamodb" {
            let request = context.request();
            let target = request.headers().get("x-amz-target").unwrap_or_default();
            let operation = target.rsplit('.').next().unwrap_or_default().to_owned();
            let body = request.body().bytes().unwrap_or_default();
            if let Ok(mut u) = self.counts.1.lock() {
                let read = u.request(&operation, body);
                cfg.interceptor_state().store_put(read);
            }
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<Receive>().is_some()
            && let Some(body) = context.response().body().bytes()
            && !received_messages(body)
            && let Ok(mut m) = self.counts.0.lock()
        {
            *m.entry(EMPTY_RECEIVES).or_default() += 1;
        }
        if let (Some(read), Some(body)) =
            (cfg.load::<units::Read>(), context.response().body().bytes())
            && let Ok(mut u) = self.counts.1.lock()
        {
            u.response(read, body, context.response().status().is_success());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::received_messages;

    #[test]
    fn a_receive_that_got_messages_is_told_from_an_empty_one() {
        assert!(received_messages(
            br#"{"Messages": [{"MessageId": "1", "Body": "{}"}]}"#
        ));
        assert!(!received_messages(b"{}"));
        assert!(!received_messages(br#"{"Messages": []}"#));
        assert!(!received_messages(b"<xml/>"));
    }
}
