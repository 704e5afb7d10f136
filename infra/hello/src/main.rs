//! The smallest Lambda function `lambda_runtime` makes: it answers every
//! event with what it got. Built with the functions' release profile, it is
//! the baseline their binary sizes and init times are compared with
//! (`make bench`); it is never deployed.

use lambda_runtime::{Error, LambdaEvent, run, service_fn};
use serde_json::Value;

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|event: LambdaEvent<Value>| async move {
        Ok::<Value, Error>(event.payload)
    }))
    .await
}
