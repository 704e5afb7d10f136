//! The `capi-sender` Lambda: drains the send queue into Meta's Conversions
//! API.
//!
//! A batch (hundreds of messages, each naming one conversion row) is sent
//! in as few requests as Meta allows: each row's attempt is leased and
//! counted in DynamoDB first (so a duplicate delivery or a second sender
//! never sends an accepted event again), the rows are grouped by site and
//! pixel, and each group goes in `POST /{pixelId}/events` requests of up to
//! 1,000 events. Meta rejects a whole request for one invalid event, so a
//! rejected request is split in halves until the invalid event stands alone
//! and fails with `META_REJECTED` while the others go.
//!
//! A transient failure keeps the message: the sender sets its visibility
//! timeout to the retry's delay (1 minute, then 10) and reports it as a
//! batch item failure, so SQS itself is the retry timer. Sent or failed,
//! the row loses its hashes; a failure is put on the bus without them.
//!
//! Near its deadline the sender claims no more rows than it can send and
//! record in time, and starts no request it could not finish: the rest go
//! back on the queue at once, unclaimed or with their attempt given back.
//! A recording that runs late all the same (DynamoDB slower than the
//! claims foretold) stops short of the deadline rather than be cut by
//! Lambda mid-write: the rows it did not reach keep their lease, and their
//! messages come back when it ends.

mod adapters;
mod claim;
mod isolate;
mod send;
mod targets;

use std::collections::BTreeMap;

use adtrail_domain::time::SharedClock;
use adtrail_http::deadline::Deadline;
use adtrail_meta::GraphClient;
use adtrail_platforms::PlatformClient;
use adtrail_store::Store;
use adtrail_store::queue::{SendMessage, Visibility};
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;

pub use claim::{CLAIM_SLICE, RECORD_MARGIN};
pub use send::SendReport;

/// What every batch needs, built once per process.
#[derive(Debug, Clone)]
pub struct Sender {
    pub store: Store,
    pub graph: GraphClient,
    /// The other platforms' conversion APIs.
    pub platforms: PlatformClient,
    pub clock: SharedClock,
    pub visibility: Visibility,
    /// Events a request at most: each platform's own largest batch unless
    /// `CAPI_EVENTS_PER_REQUEST` says fewer (the bench compares 1).
    pub events_per_request: usize,
}

/// The most events any platform takes in one request (Google's 2,000);
/// each adapter caps it at its own platform's.
pub const MOST_EVENTS_PER_REQUEST: usize = 2_000;

/// `CAPI_EVENTS_PER_REQUEST`: 1 to 2,000 (default 2,000, so each platform
/// gets its own largest batch).
///
/// # Errors
/// A message when it is set to anything else.
pub fn events_per_request_from_env() -> Result<usize, String> {
    match std::env::var("CAPI_EVENTS_PER_REQUEST") {
        Err(_) => Ok(MOST_EVENTS_PER_REQUEST),
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MOST_EVENTS_PER_REQUEST).contains(n))
            .ok_or_else(|| "CAPI_EVENTS_PER_REQUEST must be 1 to 2000".to_owned()),
    }
}

/// What the handler keeps, after its last hold, to answer Lambda.
const ANSWER_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

/// One message of the batch.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    pub message_id: String,
    pub receipt: String,
    pub message: SendMessage,
}

/// What becomes of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// Delete it: its row is sent, failed, gone, or another message holds it.
    Done,
    /// Keep it, back after this many milliseconds.
    Later(i64),
    /// Keep it, back after the queue's own visibility timeout (an AWS
    /// failure: nothing was decided).
    Retry,
}

/// The Lambda handler.
///
/// # Errors
/// Never for one message's failure; those are batch item failures.
pub async fn handle(
    sender: &Sender,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    let deadline = Some(event.context.deadline).filter(|d| *d > 0);
    let mut deliveries = vec![];
    let mut response = SqsBatchResponse::default();
    for record in event.payload.records {
        let id = record.message_id.unwrap_or_default();
        match serde_json::from_str::<SendMessage>(record.body.as_deref().unwrap_or("")) {
            Ok(message) => deliveries.push(Delivery {
                message_id: id,
                receipt: record.receipt_handle.unwrap_or_default(),
                message,
            }),
            Err(_) => {
                // A poison message: back to the queue until its receive
                // limit sends it to the dead-letter queue.
                tracing::error!(message_id = %id, "the message is not a send message");
                response.batch_item_failures.push(failure(id));
            }
        }
    }
    // Boxed: the batch's future nests deep enough (claims, sends, receipts,
    // ends) to pass the compiler's query depth when laid out inline in the
    // runtime's future; one allocation a batch.
    let (dispositions, report) = Box::pin(sender.send_batch(&deliveries, deadline)).await;
    let mut holds = vec![];
    for (d, disposition) in deliveries.iter().zip(dispositions) {
        match disposition {
            Disposition::Done => continue,
            Disposition::Later(ms) => holds.push((d.receipt.as_str(), ms)),
            Disposition::Retry => {}
        }
        response
            .batch_item_failures
            .push(failure(d.message_id.clone()));
    }
    // Ten a request, several at once: a batch handed back near the
    // deadline may hold thousands, and one after the other they would
    // outlast it. None is started in the last second, which answering
    // Lambda needs: those messages come back after the queue's timeout.
    let holding = std::time::Instant::now();
    let stop = deadline
        .and_then(|d| Deadline::from_lambda_ms(d, ANSWER_MARGIN))
        .map(Deadline::instant);
    let not_held = sender
        .visibility
        .hold_all(sender.store.queues(), &holds, stop)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect::<Vec<_>>();
    if let Some(why) = not_held.first() {
        tracing::warn!(
            messages = not_held.len(),
            error = %why,
            "could not delay some messages; they return after the queue's timeout"
        );
    }
    tracing::info!(
        claimed = report.claimed,
        sent = report.sent,
        retried = report.retried,
        failed = report.failed,
        waiting = report.waiting,
        gone = report.gone,
        released = report.released,
        deferred = report.deferred,
        unrecorded = report.unrecorded,
        requests = report.requests,
        claim_ms = report.claim_ms,
        send_ms = report.send_ms,
        record_ms = report.record_ms,
        held = holds.len() - not_held.len(),
        hold_ms = holding.elapsed().as_millis() as u64,
        "send batch done"
    );
    Ok(response)
}

fn failure(id: String) -> BatchItemFailure {
    let mut f = BatchItemFailure::default();
    f.item_identifier = id;
    f
}

/// The distinct rows of a batch, each with the indexes of its messages:
/// SQS may hand one row twice, and only its first message is worked.
pub(crate) fn distinct_rows(deliveries: &[Delivery]) -> BTreeMap<(String, String), Vec<usize>> {
    let mut rows: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, d) in deliveries.iter().enumerate() {
        rows.entry((d.message.site_id.clone(), d.message.key.clone()))
            .or_default()
            .push(i);
    }
    rows
}
