//! The Conversions API sender Lambda: builds its clients once and serves
//! the send queue's batches.

use std::sync::Arc;

use adtrail_capi_sender::{Sender, events_per_request_from_env, handle};
use adtrail_domain::time::SystemClock;
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_platforms::{PLATFORM_TIMEOUT, PlatformClient, PlatformUrls};
use adtrail_store::queue::Visibility;
use adtrail_store::{Names, Store, telemetry};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    telemetry::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let store = Store::new(&config, Names::from_env()?);
    let sender = Sender {
        visibility: Visibility::Sqs {
            queue_url: store.names.send_queue_url.clone(),
        },
        store,
        graph: GraphClient::new(GraphConfig::from_env()?),
        platforms: PlatformClient::new(PlatformUrls::from_env()?, PLATFORM_TIMEOUT),
        clock: Arc::new(SystemClock),
        events_per_request: events_per_request_from_env()?,
    };
    run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        telemetry::flushing(request_id, handle(&sender, event))
    }))
    .await
}
