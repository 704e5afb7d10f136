//! The Lead Ads worker Lambda: builds its clients once and serves the
//! leadgen queue's batches.

use std::sync::Arc;

use adtrail_domain::time::SystemClock;
use adtrail_leadgen_worker::{LeadgenWorker, handle};
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_store::queue::Visibility;
use adtrail_store::{Names, Store, telemetry};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    telemetry::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let store = Store::new(&config, Names::from_env()?);
    let worker = LeadgenWorker {
        visibility: Visibility::Sqs {
            queue_url: store
                .names
                .leadgen_queue_url
                .clone()
                .ok_or("LEADGEN_QUEUE_URL is not set")?,
        },
        store,
        graph: GraphClient::new(GraphConfig::from_env()?),
        clock: Arc::new(SystemClock),
    };
    run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        telemetry::flushing(request_id, handle(&worker, event))
    }))
    .await
}
