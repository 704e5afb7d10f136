//! An SDK interceptor that counts the requests sent to each service, so the
//! benchmarks report DynamoDB requests per unit of work from the client's
//! own view rather than an estimate.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

/// Requests sent, by service. Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<Mutex<BTreeMap<&'static str, u64>>>);

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
    }
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
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Ok(mut m) = self.counts.0.lock() {
            *m.entry(self.service).or_default() += 1;
        }
        Ok(())
    }
}
