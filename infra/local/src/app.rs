//! Assembles a whole local stack in one process: the emulator, the stack's
//! resources, the fake Meta and the other platforms' fakes (unless
//! `META_GRAPH_URL` names another Graph API: then the platforms' base URLs
//! come from their settings too), the runner and the HTTP API. `make local`, `make demo`, the
//! benchmarks and the end-to-end tests all start from here.

use std::net::SocketAddr;
use std::sync::Arc;

use adtrail_domain::plan::SyncInterval;
use adtrail_fake_meta::FakeMeta;
use adtrail_fake_platforms::FakePlatforms;
use adtrail_meta::{GraphClient, GraphConfig};
use adtrail_platforms::{PLATFORM_TIMEOUT, PlatformClient, PlatformUrls};

use crate::http::{Local, serve};
use crate::jwt::DevKeys;
use crate::moto::{Moto, sdk_config};
use crate::runner::{ClockRef, MovableClock, Runner};
use crate::stack::LocalStack;
use crate::template::{Template, default_path};

/// A running local stack.
pub struct App {
    pub local: Arc<Local>,
    pub api_url: String,
    /// The fake, when this process started one.
    pub fake: Option<FakeMeta>,
    /// The other platforms' fakes, when this process started them.
    pub platforms: Option<FakePlatforms>,
    pub moto: Moto,
}

impl App {
    pub fn runner(&self) -> &Runner {
        &self.local.runner
    }
    pub fn host_token(&self) -> String {
        self.local.keys.host_token()
    }
}

/// Starts everything. `api_addr` may use port 0. The sync interval is
/// the template's, from `SYNC_INTERVAL_MINUTES` (45 minutes unset).
///
/// # Errors
/// A message saying what could not start.
pub async fn start(
    api_addr: SocketAddr,
    clock: Arc<dyn MovableClock>,
    prefix: &str,
) -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
    let interval = adtrail_store::sync_interval_from_env()?;
    start_with(api_addr, clock, prefix, interval).await
}

/// [`start`] with a sync interval of the caller's (a test's, the bench's).
///
/// # Errors
/// A message saying what could not start.
pub async fn start_with(
    api_addr: SocketAddr,
    clock: Arc<dyn MovableClock>,
    prefix: &str,
    interval: SyncInterval,
) -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
    let moto = Moto::ensure()?;
    let config = sdk_config(&moto.url).await;
    let template = Template::load(&default_path())?;
    let stack = LocalStack::create(&config, template, prefix).await?;
    let (graph_config, fake) = match std::env::var("META_GRAPH_URL") {
        Ok(_) => (GraphConfig::from_env()?, None),
        Err(_) => {
            // The fake reads the runner's clock for Meta's 7-day rule.
            let fake = FakeMeta::start_with_clock(
                format!("{}:0", crate::moto::bind_host()).parse()?,
                Arc::new(ClockRef(clock.clone())),
            )
            .await?;
            (fake_graph_config(&fake), Some(fake))
        }
    };
    let (platform_urls, platforms) = if fake.is_some() {
        let fakes = FakePlatforms::start(
            format!("{}:0", crate::moto::bind_host()).parse()?,
            Arc::new(ClockRef(clock.clone())),
        )
        .await?;
        (PlatformUrls::under(&fakes.url())?, Some(fakes))
    } else {
        (PlatformUrls::from_env()?, None)
    };
    let timeout = adtrail_meta::timeout_from_env()
        .ok()
        .flatten()
        .unwrap_or(PLATFORM_TIMEOUT);
    let runner = Runner::new(
        stack,
        GraphClient::new(graph_config)?,
        PlatformClient::new(platform_urls, timeout)?,
        clock,
        interval,
    );
    runner.check_mappings().await?;
    let local = Arc::new(Local {
        runner,
        keys: DevKeys::local(),
        allowed_origins: std::sync::RwLock::new(crate::http::origins(
            &std::env::var("ALLOWED_ORIGINS").unwrap_or_default(),
        )),
    });
    let (bound, _task) = serve(local.clone(), api_addr).await?;
    if let Some(fake) = &fake {
        // The fake announces its form leads to the stack's webhook.
        fake.set_webhook_url(&format!("http://{bound}/v1/webhooks/meta"));
    }
    Ok(App {
        local,
        api_url: format!("http://{bound}"),
        fake,
        platforms,
        moto,
    })
}

/// The Graph client's configuration for a fake at its address: the same
/// rules as production, with the fake's plain-HTTP host allowed for
/// thumbnails.
pub fn fake_graph_config(fake: &FakeMeta) -> GraphConfig {
    let mut config = GraphConfig::meta();
    config.base_url = url::Url::parse(&fake.url()).expect("the fake's URL");
    config.timeout = adtrail_meta::timeout_from_env()
        .ok()
        .flatten()
        .unwrap_or(std::time::Duration::from_secs(10));
    config.thumbnail_hosts.push("127.0.0.1".into());
    config.insecure_thumbnail_hosts.push("127.0.0.1".into());
    config
}
