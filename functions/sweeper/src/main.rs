//! The sweeper Lambda: builds its clients once and serves schedule events.

use std::sync::Arc;

use adtrail_domain::time::SystemClock;
use adtrail_store::{Names, Store};
use adtrail_sweeper::{Sweeper, handle};
use lambda_runtime::{Error, LambdaEvent, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    let config = aws_config::load_from_env().await;
    let sweeper = Sweeper {
        store: Store::new(&config, Names::from_env()?),
        clock: Arc::new(SystemClock),
    };
    run(service_fn(|event: LambdaEvent<_>| handle(&sweeper, event))).await
}
