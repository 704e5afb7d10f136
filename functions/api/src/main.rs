//! The API Lambda: builds its clients once and serves API Gateway requests.

use std::sync::Arc;

use adtrail_api::auth::Identity;
use adtrail_api::{Api, handle};
use adtrail_domain::time::SystemClock;
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_platforms::{PLATFORM_TIMEOUT, PlatformClient, PlatformUrls};
use adtrail_store::{Names, Store, telemetry};
use lambda_http::{Error, Request, RequestExt, run, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    adtrail_store::logging::init();
    telemetry::init();
    let config = adtrail_store::sdk::from_lambda_env()?;
    let api = Api {
        store: Store::new(&config, Names::from_env()?),
        graph: GraphClient::new(GraphConfig::from_env()?),
        platforms: PlatformClient::new(PlatformUrls::from_env()?, PLATFORM_TIMEOUT),
        clock: Arc::new(SystemClock),
        limits: Default::default(),
        lead_ads: std::env::var("LEAD_ADS").is_ok_and(|v| v == "on"),
        identity: Identity::from_env()?,
    };
    run(service_fn(|req: Request| {
        let request_id = req
            .lambda_context_ref()
            .map(|c| c.request_id.clone())
            .unwrap_or_default();
        telemetry::flushing(request_id, handle(&api, req))
    }))
    .await
}
