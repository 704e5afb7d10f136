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
use adtrail_capi_sender::{Sender, Visibility};
use adtrail_dispatcher::{DispatchReport, Dispatcher};
use adtrail_domain::time::{Clock, SystemClock, VirtualClock};
use adtrail_meta::GraphClient;
use adtrail_sweeper::{SweepReport, Sweeper};
use adtrail_sync_worker::Worker;
use aws_lambda_events::eventbridge::EventBridgeEvent;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry,
    MessageSystemAttributeName,
};
use lambda_runtime::{Context, LambdaEvent};
use serde::Serialize;

use crate::stack::{LocalQueue, LocalStack};

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

/// A message a consumer failed, invisible until `due_ms`.
#[derive(Debug, Clone)]
struct Held {
    queue_url: String,
    receipt: String,
    due_ms: i64,
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
    /// The delays the sender asked for, by receipt handle.
    delays: Arc<Mutex<HashMap<String, i64>>>,
    held: Mutex<Vec<Held>>,
}

impl Runner {
    pub fn new(stack: LocalStack, graph: GraphClient, clock: Arc<dyn MovableClock>) -> Self {
        let store = stack.store.clone();
        let shared: adtrail_domain::time::SharedClock = Arc::new(ClockRef(clock.clone()));
        let delays = Arc::new(Mutex::new(HashMap::new()));
        Self {
            sender: Sender {
                store: store.clone(),
                graph: graph.clone(),
                clock: shared.clone(),
                visibility: Visibility::Recorded(delays.clone()),
                events_per_request: adtrail_capi_sender::events_per_request_from_env()
                    .unwrap_or(adtrail_domain::capi::MAX_EVENTS_PER_REQUEST),
            },
            delays,
            api: Api {
                store: store.clone(),
                graph: graph.clone(),
                clock: shared.clone(),
                limits: Default::default(),
            },
            dispatcher: Dispatcher {
                store: store.clone(),
                clock: shared.clone(),
            },
            worker: Worker {
                store: store.clone(),
                graph,
                clock: shared.clone(),
            },
            sweeper: Sweeper {
                store,
                clock: shared.clone(),
            },
            stack,
            clock,
            held: Mutex::new(vec![]),
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
        adtrail_dispatcher::handle(
            &self.dispatcher,
            LambdaEvent::new(scheduled_event(), Context::default()),
        )
        .await
        .map_err(RunnerError::Handler)
    }

    /// The sweeper, as its schedule would invoke it.
    ///
    /// # Errors
    /// [`RunnerError::Handler`] when it fails.
    pub async fn sweep(&self) -> Result<SweepReport, RunnerError> {
        adtrail_sweeper::handle(
            &self.sweeper,
            LambdaEvent::new(scheduled_event(), Context::default()),
        )
        .await
        .map_err(RunnerError::Handler)
    }

    /// Polls every consumed queue and invokes its consumer until no queue
    /// has a deliverable message.
    ///
    /// # Errors
    /// [`RunnerError`] when SQS or a handler fails as a whole.
    pub async fn drain(&self) -> Result<DrainReport, RunnerError> {
        let mut report = DrainReport::default();
        for _ in 0..MAX_DRAIN_ROUNDS {
            self.release_due().await?;
            let mut any = false;
            for queue in self.stack.queues.iter().filter(|q| q.consumer.is_some()) {
                if self.deliver_batch(queue, &mut report).await? {
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        Ok(report)
    }

    /// One batch from one queue to its consumer. Answers whether any
    /// message came.
    async fn deliver_batch(
        &self,
        queue: &LocalQueue,
        report: &mut DrainReport,
    ) -> Result<bool, RunnerError> {
        let Some((function, batch)) = &queue.consumer else {
            return Ok(false);
        };
        let messages = self.receive_batch(queue, *batch).await?;
        if messages.is_empty() {
            return Ok(false);
        }
        report.batches += 1;
        let failed = self.invoke(function, sqs_event(queue, &messages)).await;
        self.settle(queue, &messages, &failed, report).await?;
        Ok(true)
    }

    /// Up to the mapping's batch size, gathered from several receives as
    /// Lambda does.
    async fn receive_batch(
        &self,
        queue: &LocalQueue,
        batch: i64,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>, RunnerError> {
        let batch_size = usize::try_from(batch.max(1)).unwrap_or(1);
        let mut messages = vec![];
        while messages.len() < batch_size {
            let want = (batch_size - messages.len()).clamp(1, 10);
            let out = self
                .stack
                .store
                .sqs
                .receive_message()
                .queue_url(&queue.url)
                .max_number_of_messages(want as i32)
                .visibility_timeout(HELD_VISIBILITY_SECS)
                .message_system_attribute_names(MessageSystemAttributeName::All)
                .send()
                .await
                .map_err(sqs_err)?;
            let got = out.messages.unwrap_or_default();
            if got.is_empty() {
                break;
            }
            messages.extend(got);
        }
        Ok(messages)
    }

    /// Invokes the consumer with its timeout as the deadline; answers the
    /// ids of the messages that failed (all of them when the handler
    /// errs, as Lambda fails the whole batch).
    async fn invoke(&self, function: &str, event: SqsEvent) -> Vec<String> {
        let ids: Vec<String> = event
            .records
            .iter()
            .filter_map(|r| r.message_id.clone())
            .collect();
        let timeout_ms = self
            .stack
            .template
            .function(function)
            .map_or(30, |f| f.timeout)
            * 1_000;
        let mut ctx = Context::default();
        ctx.deadline = (SystemClock.now_ms() + timeout_ms) as u64;
        let response = match function {
            "SyncWorkerFunction" => {
                adtrail_sync_worker::handle(&self.worker, LambdaEvent::new(event, ctx)).await
            }
            "CapiSenderFunction" => {
                adtrail_capi_sender::handle(&self.sender, LambdaEvent::new(event, ctx)).await
            }
            other => {
                tracing::warn!(function = other, "no local consumer for this function");
                Ok(SqsBatchResponse::default())
            }
        };
        match response {
            Ok(r) => r
                .batch_item_failures
                .into_iter()
                .map(|f| f.item_identifier)
                .collect(),
            Err(_) => ids,
        }
    }

    /// Deletes what was delivered; holds what failed until the delay its
    /// consumer set, else the queue's visibility timeout.
    async fn settle(
        &self,
        queue: &LocalQueue,
        messages: &[aws_sdk_sqs::types::Message],
        failed: &[String],
        report: &mut DrainReport,
    ) -> Result<(), RunnerError> {
        let mut deletes = vec![];
        for (i, m) in messages.iter().enumerate() {
            let id = m.message_id.clone().unwrap_or_default();
            let receipt = m.receipt_handle.clone().unwrap_or_default();
            if failed.contains(&id) {
                report.failed += 1;
                let delay_ms = self
                    .delays
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&receipt)
                    .unwrap_or(queue.visibility_timeout * 1_000);
                let due_ms = self.now() + delay_ms;
                self.held
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Held {
                        queue_url: queue.url.clone(),
                        receipt,
                        due_ms,
                    });
            } else {
                report.delivered += 1;
                deletes.push(
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(receipt)
                        .build()
                        .map_err(sqs_err)?,
                );
            }
        }
        if !deletes.is_empty() {
            self.stack
                .store
                .sqs
                .delete_message_batch()
                .queue_url(&queue.url)
                .set_entries(Some(deletes))
                .send()
                .await
                .map_err(sqs_err)?;
        }
        Ok(())
    }

    /// Makes held messages whose visibility timeout passed visible again.
    async fn release_due(&self) -> Result<(), RunnerError> {
        let now = self.now();
        let due: Vec<Held> = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            let (due, keep) = held.drain(..).partition(|h| h.due_ms <= now);
            *held = keep;
            due
        };
        let mut by_queue: HashMap<String, Vec<String>> = HashMap::new();
        for h in due {
            by_queue.entry(h.queue_url).or_default().push(h.receipt);
        }
        for (queue_url, receipts) in by_queue {
            for chunk in receipts.chunks(10) {
                let entries = chunk
                    .iter()
                    .enumerate()
                    .map(|(i, receipt)| {
                        ChangeMessageVisibilityBatchRequestEntry::builder()
                            .id(i.to_string())
                            .receipt_handle(receipt)
                            .visibility_timeout(0)
                            .build()
                            .map_err(sqs_err)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                self.stack
                    .store
                    .sqs
                    .change_message_visibility_batch()
                    .queue_url(&queue_url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .map_err(sqs_err)?;
            }
        }
        Ok(())
    }

    /// Messages held back after a failure, not yet due.
    pub fn held_count(&self) -> usize {
        self.held.lock().map(|h| h.len()).unwrap_or(0)
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

/// The event Lambda hands an SQS consumer.
fn sqs_event(queue: &LocalQueue, messages: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let mut event = SqsEvent::default();
    for m in messages {
        let mut record = SqsMessage::default();
        record.message_id = m.message_id.clone();
        record.receipt_handle = m.receipt_handle.clone();
        record.body = m.body.clone();
        record.event_source = Some("aws:sqs".into());
        record.event_source_arn = Some(queue.arn.clone());
        record.attributes = m
            .attributes
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
            .collect();
        event.records.push(record);
    }
    event
}
