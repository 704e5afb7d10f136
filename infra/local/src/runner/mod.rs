//! The parts of AWS that moto does not run: the schedules and the event
//! source mappings. The runner fires the dispatcher and the sweeper, and
//! polls each queue and invokes its consumer the way Lambda does: batches of
//! the template's size, partial batch failures, a failed message coming back
//! after the queue's visibility timeout, redrive to the dead-letter queue
//! after the receive limit (moto's own).
//!
//! Redelivery follows the runner's clock, not the wall clock: a message the
//! consumer failed is held invisible in moto and released when the clock
//! passes its visibility timeout, so tests on a virtual clock run a
//! 15-minute retry in milliseconds.

use std::sync::{Arc, Mutex};

use std::collections::HashMap;

use adtrail_api::Api;
use adtrail_capi_sender::Sender;
use adtrail_dispatcher::{DispatchReport, Dispatcher};
use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::{Clock, SystemClock, VirtualClock};
use adtrail_leadgen_worker::LeadgenWorker;
use adtrail_meta::GraphClient;
use adtrail_store::queue::Visibility;
use adtrail_sweeper::{SweepReport, Sweeper};
use adtrail_sync_worker::Worker;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
    MessageSystemAttributeName,
};
use lambda_runtime::LambdaEvent;
use serde::Serialize;

use crate::stack::{LocalQueue, LocalStack};

mod invocation;
mod mapping;

pub use invocation::{
    CountingSink, HandlerTime, Taken, TimedOut, context_until, count_logged, metrics_seen,
};

use mapping::{Gathering, Held};

/// Longer than any test or demo: a message the runner holds stays invisible
/// in moto until the runner releases it.
const HELD_VISIBILITY_SECS: i32 = 43_200;
/// Bounds one drain: no queue loop runs forever.
const MAX_DRAIN_ROUNDS: usize = 10_000;

/// A clock the runner can move: every handler reads it.
pub trait MovableClock: Clock {
    fn advance(&self, ms: i64) -> i64;
    fn set(&self, ms: i64);
}

impl MovableClock for VirtualClock {
    fn advance(&self, ms: i64) -> i64 {
        VirtualClock::advance(self, ms)
    }
    fn set(&self, ms: i64) {
        VirtualClock::set(self, ms);
    }
}

/// The wall clock plus an offset: `make local` runs in real time, and
/// `/_local/clock` moves it ahead.
#[derive(Debug, Default)]
pub struct OffsetClock(std::sync::atomic::AtomicI64);

impl Clock for OffsetClock {
    fn now_ms(&self) -> i64 {
        SystemClock.now_ms() + self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl MovableClock for OffsetClock {
    fn advance(&self, ms: i64) -> i64 {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::SeqCst);
        self.now_ms()
    }
    fn set(&self, ms: i64) {
        self.0.store(
            ms - SystemClock.now_ms(),
            std::sync::atomic::Ordering::SeqCst,
        );
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("SQS failed")]
    Sqs(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("a handler failed")]
    Handler(#[source] Box<dyn std::error::Error + Send + Sync>),
}

fn sqs_err<E: std::error::Error + Send + Sync + 'static>(e: E) -> RunnerError {
    RunnerError::Sqs(Box::new(e))
}

/// What one drain delivered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainReport {
    pub delivered: usize,
    pub failed: usize,
    pub batches: usize,
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TickReport {
    pub now: i64,
    pub dispatched: DispatchReport,
    pub sweep: SweepReport,
    pub queues: DrainReport,
}

/// The local stack's functions, wired to its resources and one clock.
pub struct Runner {
    pub stack: LocalStack,
    pub clock: Arc<dyn MovableClock>,
    pub api: Api,
    pub dispatcher: Dispatcher,
    pub worker: Worker,
    pub sweeper: Sweeper,
    pub sender: Sender,
    pub leadgen: LeadgenWorker,
    /// The delays the sender asked for, by receipt handle.
    delays: Arc<Mutex<HashMap<String, i64>>>,
    held: Mutex<Vec<Held>>,
    /// The batch each queue's poller is gathering (by queue URL) while
    /// the mapping's batching window is open.
    gathering: Mutex<HashMap<String, Gathering>>,
    /// Each function's invocations and their handlers' time (wall ms), for
    /// the bench's Lambda cost.
    pub handler_time: HandlerTime,
}

impl Runner {
    /// Each function gets its own clients, judged against its own role.
    pub fn new(
        stack: LocalStack,
        graph: GraphClient,
        platforms: adtrail_platforms::PlatformClient,
        clock: Arc<dyn MovableClock>,
        interval: SyncInterval,
        quiet_interval: SyncInterval,
    ) -> Self {
        let shared: adtrail_domain::time::SharedClock = Arc::new(ClockRef(clock.clone()));
        let delays = Arc::new(Mutex::new(HashMap::new()));
        let send_queue_url = stack.store.names.send_queue_url.clone();
        Self {
            sender: Sender {
                store: stack.store_for("CapiSenderFunction"),
                graph: graph.clone(),
                platforms: platforms.clone(),
                clock: shared.clone(),
                visibility: Visibility::Recorded {
                    queue_url: send_queue_url,
                    delays: delays.clone(),
                },
                events_per_request: adtrail_capi_sender::events_per_request_from_env()
                    .unwrap_or(adtrail_capi_sender::MOST_EVENTS_PER_REQUEST),
            },
            delays: delays.clone(),
            api: Api {
                store: stack.store_for("ApiFunction"),
                graph: graph.clone(),
                platforms,
                clock: shared.clone(),
                limits: Default::default(),
                // The local stack runs with `LeadAds` on.
                lead_ads: true,
                identity: Default::default(),
            },
            dispatcher: Dispatcher {
                store: stack.store_for("DispatcherFunction"),
                clock: shared.clone(),
                interval,
                quiet_interval,
                slot_budget: adtrail_dispatcher::SLOT_BUDGET,
            },
            leadgen: LeadgenWorker {
                store: stack.store_for("LeadgenWorkerFunction"),
                graph: graph.clone(),
                clock: shared.clone(),
                visibility: Visibility::Recorded {
                    queue_url: stack
                        .store
                        .names
                        .leadgen_queue_url
                        .clone()
                        .unwrap_or_default(),
                    delays: delays.clone(),
                },
            },
            worker: Worker {
                store: stack.store_for("SyncWorkerFunction"),
                graph: graph.clone(),
                clock: shared.clone(),
                interval,
                quiet_interval,
                tokens: Default::default(),
            },
            sweeper: Sweeper {
                store: stack.store_for("SweeperFunction"),
                clock: shared.clone(),
                graph,
                // The local stack runs with `LeadAds` on.
                lead_ads: true,
                deadline: None,
            },
            stack,
            clock,
            held: Mutex::new(vec![]),
            gathering: Mutex::new(HashMap::new()),
            handler_time: HandlerTime::default(),
        }
    }

    /// The clients of the function consuming a queue: Lambda's event
    /// source mapping polls with that function's role.
    fn consumer_store(&self, function: &str) -> &adtrail_store::Store {
        match function {
            "SyncWorkerFunction" => &self.worker.store,
            "CapiSenderFunction" => &self.sender.store,
            "LeadgenWorkerFunction" => &self.leadgen.store,
            _ => &self.stack.store,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Moves the clock; held messages whose time came become deliverable.
    ///
    /// # Errors
    /// [`RunnerError::Sqs`] when a release fails.
    pub async fn advance(&self, ms: i64) -> Result<i64, RunnerError> {
        let now = self.clock.advance(ms);
        self.release_due().await?;
        Ok(now)
    }

    /// Sets the clock to an instant.
    ///
    /// # Errors
    /// [`RunnerError::Sqs`] when a release fails.
    pub async fn set_clock(&self, ms: i64) -> Result<i64, RunnerError> {
        self.clock.set(ms);
        self.release_due().await?;
        Ok(self.now())
    }

    /// Fires every schedule once, then drains every queue until idle.
    ///
    /// # Errors
    /// [`RunnerError`] when a handler or SQS fails.
    pub async fn tick(&self) -> Result<TickReport, RunnerError> {
        let dispatched = self.dispatch().await?;
        let sweep = self.sweep().await?;
        let queues = self.drain().await?;
        Ok(TickReport {
            now: self.now(),
            dispatched,
            sweep,
            queues,
        })
    }

    /// The dispatcher, as its schedule would invoke it.
    ///
    /// # Errors
    /// [`RunnerError::Handler`] when it fails.
    pub async fn dispatch(&self) -> Result<DispatchReport, RunnerError> {
        let timeout = self.timeout("DispatcherFunction");
        let handler = Box::pin(adtrail_dispatcher::handle(
            &self.dispatcher,
            LambdaEvent::new(scheduled_event(), context_until(timeout)),
        ));
        self.handler_time
            .invoke("DispatcherFunction", timeout, handler)
            .await
            .map_err(|e| RunnerError::Handler(Box::new(e)))?
            .map_err(RunnerError::Handler)
    }

    /// The sweeper, as its schedule would invoke it.
    ///
    /// # Errors
    /// [`RunnerError::Handler`] when it fails.
    pub async fn sweep(&self) -> Result<SweepReport, RunnerError> {
        let timeout = self.timeout("SweeperFunction");
        let handler = Box::pin(adtrail_sweeper::handle(
            &self.sweeper,
            LambdaEvent::new(scheduled_event(), context_until(timeout)),
        ));
        self.handler_time
            .invoke("SweeperFunction", timeout, handler)
            .await
            .map_err(|e| RunnerError::Handler(Box::new(e)))?
            .map_err(RunnerError::Handler)
    }

    /// A function's `Timeout` in the template (as the stack's settings
    /// left it); Lambda's default of 3 s for one the template does not
    /// name.
    pub fn timeout(&self, function: &str) -> std::time::Duration {
        let seconds = self
            .stack
            .template
            .function(function)
            .map_or(3, |f| f.timeout);
        std::time::Duration::from_secs(seconds.max(1) as u64)
    }
}

/// Lets the handlers hold the runner's clock as a plain [`Clock`].
#[derive(Debug)]
pub(crate) struct ClockRef(pub(crate) Arc<dyn MovableClock>);

impl Clock for ClockRef {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
}

/// The event EventBridge Scheduler hands a function.
pub fn scheduled_event() -> EventBridgeEvent<serde_json::Value> {
    serde_json::from_value(serde_json::json!({
        "version": "0", "id": uuid::Uuid::new_v4().to_string(), "detail-type": "Scheduled Event",
        "source": "aws.scheduler", "account": "000000000000", "region": "us-east-1", "resources": [], "detail": {}
    }))
    .expect("a valid EventBridge event")
}
