//! Assembles a whole local stack in one process: the emulator, the stack's
//! resources, the fake Meta and the other platforms' fakes (unless
//! `META_GRAPH_URL` names another Graph API: then the platforms' base URLs
//! come from their settings too), the runner and the HTTP API. `make local`, `make demo`, the
//! benchmarks and the end-to-end tests all start from here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

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

/// What a stack keeps beyond its resources' names: the deployed stack's
/// settings, which a test or the bench may set for its stack alone (never
/// through the process's environment, which every stack of a test run and
/// every function it starts would share).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The template's `SyncIntervalMinutes`.
    pub interval: SyncInterval,
    /// The template's `QuietSyncIntervalMinutes`.
    pub quiet_interval: SyncInterval,
    /// How long the runner's clients wait for Meta and the other platforms
    /// (`META_TIMEOUT_MS`); `None`: 10 s for the fake Meta, the platform
    /// client's 30 s for the others.
    pub timeout: Option<Duration>,
    /// One function's `Timeout` (its logical id, whole seconds) when not
    /// the template's: a test reaches the end of an invocation's time
    /// without waiting the template's half minute or more.
    pub function_timeout: Option<(&'static str, Duration)>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval: SyncInterval::DEFAULT,
            quiet_interval: SyncInterval::QUIET_DEFAULT,
            timeout: None,
            function_timeout: None,
        }
    }
}

impl Settings {
    /// The defaults with another sync interval.
    pub fn every(interval: SyncInterval) -> Self {
        Self {
            interval,
            ..Self::default()
        }
    }

    /// From `SYNC_INTERVAL_MINUTES`, `QUIET_SYNC_INTERVAL_MINUTES` and
    /// `META_TIMEOUT_MS`, as the
    /// functions read them.
    ///
    /// # Errors
    /// A message naming the setting that is not a valid value.
    pub fn from_env() -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self {
            interval: adtrail_store::sync_interval_from_env()?,
            quiet_interval: adtrail_store::quiet_interval_from_env()?,
            timeout: adtrail_meta::timeout_from_env()?,
            function_timeout: None,
        })
    }
}

/// Starts everything. `api_addr` may use port 0. The settings come from
/// the environment ([`Settings::from_env`]).
///
/// # Errors
/// A message saying what could not start.
pub async fn start(
    api_addr: SocketAddr,
    clock: Arc<dyn MovableClock>,
    prefix: &str,
) -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
    start_with(api_addr, clock, prefix, Settings::from_env()?).await
}

/// [`start`] with settings of the caller's (a test's, the bench's).
///
/// # Errors
/// A message saying what could not start.
pub async fn start_with(
    api_addr: SocketAddr,
    clock: Arc<dyn MovableClock>,
    prefix: &str,
    settings: Settings,
) -> Result<App, Box<dyn std::error::Error + Send + Sync>> {
    let moto = Moto::ensure()?;
    let config = sdk_config(&moto.url).await;
    let mut template = Template::load(&default_path())?;
    if let Some((function, t)) = settings.function_timeout {
        template.set_timeout(function, t.as_secs().max(1) as i64);
    }
    let stack = LocalStack::create(&config, template, prefix).await?;
    let (graph_config, fake) = match std::env::var("META_GRAPH_URL") {
        Ok(_) => {
            let mut config = GraphConfig::from_env()?;
            config.timeout = settings.timeout.unwrap_or(config.timeout);
            (config, None)
        }
        Err(_) => {
            // The fake reads the runner's clock for Meta's 7-day rule.
            let fake = FakeMeta::start_with_clock(
                format!("{}:0", crate::moto::bind_host()).parse()?,
                Arc::new(ClockRef(clock.clone())),
            )
            .await?;
            let mut config = fake_graph_config(&fake);
            config.timeout = settings.timeout.unwrap_or(FAKE_META_TIMEOUT);
            (config, Some(fake))
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
    let timeout = settings.timeout.unwrap_or(PLATFORM_TIMEOUT);
    let runner = Runner::new(
        stack,
        GraphClient::new(graph_config),
        PlatformClient::new(platform_urls, timeout),
        clock,
        settings.interval,
        settings.quiet_interval,
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

/// The wait for the fake Meta unless the settings say otherwise: it
/// answers on loopback.
const FAKE_META_TIMEOUT: Duration = Duration::from_secs(10);

/// The Graph client's configuration for a fake at its address: the same
/// rules as production, with the fake's plain-HTTP host allowed for
/// thumbnails.
pub fn fake_graph_config(fake: &FakeMeta) -> GraphConfig {
    let mut config = GraphConfig::meta();
    config.base_url = url::Url::parse(&fake.url()).expect("the fake's URL");
    config.timeout = FAKE_META_TIMEOUT;
    config.thumbnail_hosts.push("127.0.0.1".into());
    config.insecure_thumbnail_hosts.push("127.0.0.1".into());
    config
}
