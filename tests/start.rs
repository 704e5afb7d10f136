//! How a test's stack starts: the deployed stack's settings a test may
//! set for its stack alone, and the virtual clock it starts at.

use std::sync::Arc;

use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::VirtualClock;
use adtrail_local::app::{Settings, start_with};

use crate::{Harness, T0};

impl Harness {
    /// A fresh stack with the clock at [`T0`].
    pub async fn start() -> Self {
        Self::start_at(T0).await
    }

    pub async fn start_at(now: i64) -> Self {
        Self::start_with(now, Settings::default()).await
    }

    /// A fresh stack whose dispatcher and worker keep another interval
    /// (the template's `SyncIntervalMinutes`).
    pub async fn start_every(now: i64, interval: SyncInterval) -> Self {
        Self::start_with(now, Settings::every(interval)).await
    }

    /// A fresh stack whose clients give up on Meta and the other platforms
    /// after `timeout` (`META_TIMEOUT_MS`): the fault runs, whose fakes
    /// hang longer than that. This stack's alone.
    pub async fn start_impatient(timeout: std::time::Duration) -> Self {
        Self::start_with(
            T0,
            Settings {
                timeout: Some(timeout),
                ..Settings::default()
            },
        )
        .await
    }

    /// A fresh stack whose `function` (a logical id of the template)
    /// times out after `timeout`, not the template's 30 seconds or more:
    /// an invocation runs out of time without the test waiting that long.
    /// This stack's alone.
    pub async fn start_hurried(function: &'static str, timeout: std::time::Duration) -> Self {
        Self::start_with(
            T0,
            Settings {
                function_timeout: Some((function, timeout)),
                ..Settings::default()
            },
        )
        .await
    }

    /// A fresh stack with the clock at `now` and the deployed stack's
    /// `settings` of the test's.
    pub async fn start_with(now: i64, settings: Settings) -> Self {
        let clock = VirtualClock::starting_at(now);
        let prefix = format!("t-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let app = start_with(
            "127.0.0.1:0".parse().expect("addr"),
            Arc::new(clock.clone()),
            &prefix,
            settings,
        )
        .await
        .expect("the local stack starts (is moto reachable? run through `make test`)");
        Self {
            app,
            clock,
            http: reqwest::Client::new(),
        }
    }
}
