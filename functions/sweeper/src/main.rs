//! The sweeper Lambda: builds its clients once and serves schedule events.

use std::sync::Arc;

use adtrail_domain::time::SystemClock;
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_store::{Names, Store, telemetry};
use adtrail_sweeper::{Sweeper, handle};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    telemetry::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let sweeper = Sweeper {
        store: Store::new(&config, Names::from_env()?),
        clock: Arc::new(SystemClock),
        graph: GraphClient::new(GraphConfig::from_env()?),
        lead_ads: std::env::var("LEAD_ADS").is_ok_and(|v| v == "on"),
        deadline: None,
    };
    run(service_fn(|event: LambdaEvent<_>| {
        let request_id = event.context.request_id.clone();
        telemetry::flushing(request_id, handle(&sweeper, event))
    }))
    .await
}
