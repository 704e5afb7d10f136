//! The dispatcher Lambda: builds its clients once and serves schedule events.

use std::sync::Arc;

use adtrail_dispatcher::{Dispatcher, handle};
use adtrail_domain::time::SystemClock;
use adtrail_store::{Names, Store};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let dispatcher = Dispatcher {
        store: Store::new(&config, Names::from_env()?),
        clock: Arc::new(SystemClock),
        interval: adtrail_store::sync_interval_from_env()?,
        quiet_interval: adtrail_store::quiet_interval_from_env()?,
        slot_budget: adtrail_dispatcher::SLOT_BUDGET,
    };
    run(service_fn(|event: LambdaEvent<_>| {
        handle(&dispatcher, event)
    }))
    .await
}
