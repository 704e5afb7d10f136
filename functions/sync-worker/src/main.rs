//! The sync worker Lambda: builds its clients once and serves SQS batches.

use std::sync::Arc;

use adtrail_domain::time::SystemClock;
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_store::{Names, Store, telemetry};
use adtrail_sync_worker::{Worker, handle};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    telemetry::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let worker = Worker {
        store: Store::new(&config, Names::from_env()?),
        graph: GraphClient::new(GraphConfig::from_env()?),
        clock: Arc::new(SystemClock),
        interval: adtrail_store::sync_interval_from_env()?,
        quiet_interval: adtrail_store::quiet_interval_from_env()?,
        tokens: Default::default(),
    };
    run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        telemetry::flushing(request_id, handle(&worker, event))
    }))
    .await
}
