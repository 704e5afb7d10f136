//! DynamoDB, SQS and EventBridge as they fail in the cloud and never in
//! moto: a set share of the functions' DynamoDB requests is answered,
//! before it reaches moto, with one of the errors the real service returns
//! under load (a transaction cancelled for `TransactionConflict`, a single
//! write in conflict with a transaction,
//! `ProvisionedThroughputExceededException`, `ThrottlingException`,
//! `InternalServerError`), or, for a batch, with every key handed back
//! unprocessed. And a share of the batches answered entry by entry (SQS's
//! `SendMessageBatch` and `ChangeMessageVisibilityBatch`, EventBridge's
//! `PutEvents`) is answered `200` with
//! every entry failed on the service's side (`InternalError`,
//! `InternalFailure`), which the SDK never retries: the request succeeded.
//! The answers are byte for byte what the services send, so the SDK parses
//! them into its own types and the store's retry policy is what gets
//! tested.
//!
//! Faults come before the write, never after: DynamoDB's idempotency
//! tokens make a lost answer of a transaction safe to retry, and moto does
//! not keep them.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use serde_json::{Value, json};

use super::calls::Call;

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    TransactionConflict,
    ConflictWithTransaction,
    ProvisionedThroughput,
    Throttling,
    InternalError,
    Unprocessed,
    /// SQS or EventBridge: a batch whose every entry failed.
    EntriesFailed,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Self::TransactionConflict => "TransactionCanceled(TransactionConflict)",
            Self::ConflictWithTransaction => "TransactionConflictException",
            Self::ProvisionedThroughput => "ProvisionedThroughputExceededException",
            Self::Throttling => "ThrottlingException",
            Self::InternalError => "InternalServerError",
            Self::Unprocessed => "Unprocessed",
            Self::EntriesFailed => "batch entries failed",
        }
    }

    /// The faults DynamoDB can answer to this operation.
    fn possible(operation: &str) -> &'static [Fault] {
        const COMMON: &[Fault] = &[
            Fault::ProvisionedThroughput,
            Fault::Throttling,
            Fault::InternalError,
        ];
        match operation {
            "TransactWriteItems" => &[
                Fault::TransactionConflict,
                Fault::TransactionConflict,
                Fault::ProvisionedThroughput,
                Fault::Throttling,
                Fault::InternalError,
            ],
            "PutItem" | "UpdateItem" | "DeleteItem" => &[
                Fault::ConflictWithTransaction,
                Fault::ProvisionedThroughput,
                Fault::Throttling,
                Fault::InternalError,
            ],
            "BatchGetItem" | "BatchWriteItem" => &[
                Fault::Unprocessed,
                Fault::Unprocessed,
                Fault::ProvisionedThroughput,
                Fault::Throttling,
                Fault::InternalError,
            ],
            _ => COMMON,
        }
    }
}

/// The share of requests to fail and what was injected.
#[derive(Debug)]
pub struct Faults {
    per_mille: AtomicU32,
    /// The batches' share, apart: a test that turns DynamoDB off still
    /// has its queues and its bus, as in the cloud.
    batch_per_mille: AtomicU32,
    /// Batches still to refuse whatever the share (a test's deterministic
    /// outage).
    batch_refuse_next: AtomicU32,
    seed: u64,
    rng: Mutex<fastrand::Rng>,
    injected: Mutex<BTreeMap<Fault, u64>>,
}

impl Default for Faults {
    fn default() -> Self {
        Self::new(0.0, 0)
    }
}

impl Faults {
    /// Fails `share` (0 to 1) of DynamoDB requests, drawn from `seed`.
    pub fn new(share: f64, seed: u64) -> Self {
        Self {
            per_mille: AtomicU32::new(per_mille(share)),
            batch_per_mille: AtomicU32::new(0),
            batch_refuse_next: AtomicU32::new(0),
            seed,
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            injected: Mutex::new(BTreeMap::new()),
        }
    }

    /// The shares and seed from `ADTRAIL_DDB_FAULTS`, `ADTRAIL_BATCH_FAULTS`
    /// and `ADTRAIL_FAULT_SEED` (none when unset).
    pub fn from_env() -> Self {
        let share_of = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (share, batch_share) = (
            share_of("ADTRAIL_DDB_FAULTS"),
            share_of("ADTRAIL_BATCH_FAULTS"),
        );
        let seed = std::env::var("ADTRAIL_FAULT_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| fastrand::u64(..));
        if share > 0.0 || batch_share > 0.0 {
            tracing::info!(
                share,
                batch_share,
                seed,
                "DynamoDB, SQS and EventBridge faults injected"
            );
        }
        let faults = Self::new(share, seed);
        faults.set_batch_share(batch_share);
        faults
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn share(&self) -> f64 {
        f64::from(self.per_mille.load(Ordering::Relaxed)) / 1_000.0
    }

    /// Fails `share` of the requests from now on (a test turns DynamoDB
    /// off and on).
    pub fn set_share(&self, share: f64) {
        self.per_mille.store(per_mille(share), Ordering::Relaxed);
    }

    /// Refuses `share` of the batches answered entry by entry from now on.
    pub fn set_batch_share(&self, share: f64) {
        self.batch_per_mille
            .store(per_mille(share), Ordering::Relaxed);
    }

    /// Refuses the next `n` batches answered entry by entry, whatever the
    /// share.
    pub fn refuse_next_batches(&self, n: u32) {
        self.batch_refuse_next.store(n, Ordering::Relaxed);
    }

    pub fn batch_share(&self) -> f64 {
        f64::from(self.batch_per_mille.load(Ordering::Relaxed)) / 1_000.0
    }

    /// Faults injected so far, by kind.
    pub fn injected(&self) -> BTreeMap<&'static str, u64> {
        self.injected
            .lock()
            .map(|m| m.iter().map(|(k, v)| (k.name(), *v)).collect())
            .unwrap_or_default()
    }

    /// The answer that replaces this request, when it is to fail.
    pub fn inject(&self, call: &Call, body: &[u8]) -> Option<HttpResponse> {
        let per_mille = match (call.service, call.operation.as_str()) {
            ("dynamodb", _) => self.per_mille.load(Ordering::Relaxed),
            ("sqs", "SendMessageBatch" | "ChangeMessageVisibilityBatch")
            | ("events", "PutEvents") => {
                let refuse = self.batch_refuse_next.fetch_update(
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                    |n| n.checked_sub(1),
                );
                if refuse.is_ok() {
                    1_000
                } else {
                    self.batch_per_mille.load(Ordering::Relaxed)
                }
            }
            _ => return None,
        };
        if per_mille == 0 {
            return None;
        }
        let fault = {
            let mut rng = self.rng.lock().ok()?;
            if rng.u32(0..1_000) >= per_mille {
                return None;
            }
            if call.service != "dynamodb" {
                Fault::EntriesFailed
            } else {
                let possible = Fault::possible(&call.operation);
                possible[rng.usize(..possible.len())]
            }
        };
        if let Ok(mut m) = self.injected.lock() {
            *m.entry(fault).or_default() += 1;
        }
        Some(answer(fault, call, body))
    }
}

fn per_mille(share: f64) -> u32 {
    (share.clamp(0.0, 1.0) * 1_000.0).round() as u32
}

fn answer(fault: Fault, call: &Call, body: &[u8]) -> HttpResponse {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = |kind: &str, message: &str| json!({ "__type": kind, "message": message });
    let (status, body) = match fault {
        Fault::TransactionConflict => {
            let items = call.needs.len().max(1);
            let conflicted = items / 2;
            let reasons: Vec<Value> = (0..items)
                .map(|i| {
                    if i == conflicted {
                        json!({"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"})
                    } else {
                        json!({"Code": "None"})
                    }
                })
                .collect();
            let codes: Vec<&str> = (0..items)
                .map(|i| {
                    if i == conflicted {
                        "TransactionConflict"
                    } else {
                        "None"
                    }
                })
                .collect();
            (
                400,
                json!({
                    "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                    "Message": format!(
                        "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
                        codes.join(", ")
                    ),
                    "CancellationReasons": reasons,
                }),
            )
        }
        Fault::ConflictWithTransaction => (
            400,
            error(
                "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
                "Transaction is ongoing for the item",
            ),
        ),
        Fault::ProvisionedThroughput => (
            400,
            error(
                "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "The level of configured provisioned throughput for the table was exceeded.",
            ),
        ),
        Fault::Throttling => (
            400,
            error(
                "com.amazon.coral.availability#ThrottlingException",
                "Throughput exceeds the current capacity of your table or index.",
            ),
        ),
        Fault::InternalError => (
            500,
            error(
                "com.amazonaws.dynamodb.v20120810#InternalServerError",
                "Internal server error",
            ),
        ),
        Fault::Unprocessed if call.operation == "BatchGetItem" => (
            200,
            json!({"Responses": {}, "UnprocessedKeys": request["RequestItems"]}),
        ),
        Fault::Unprocessed => (200, json!({"UnprocessedItems": request["RequestItems"]})),
        Fault::EntriesFailed if call.service == "events" => {
            let entries = request["Entries"].as_array().map_or(0, Vec::len);
            let failed = json!({"ErrorCode": "InternalFailure",
                                "ErrorMessage": "Internal Service Failure"});
            let mut r = dynamodb_response(
                200,
                &json!({"FailedEntryCount": entries, "Entries": vec![failed; entries]}),
            );
            r.headers_mut()
                .insert("content-type", "application/x-amz-json-1.1");
            return r;
        }
        Fault::EntriesFailed => {
            let failed: Vec<Value> = request["Entries"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|e| {
                    json!({"Id": e["Id"], "SenderFault": false, "Code": "InternalError",
                           "Message": "We encountered an internal error. Please try again."})
                })
                .collect();
            (200, json!({"Successful": [], "Failed": failed}))
        }
    };
    dynamodb_response(status, &body)
}

/// An answer as DynamoDB sends it (and SQS, whose JSON protocol is the
/// same).
pub fn dynamodb_response(status: u16, body: &Value) -> HttpResponse {
    let mut response = HttpResponse::new(
        StatusCode::try_from(status).unwrap_or_else(|_| StatusCode::try_from(500).expect("500")),
        SdkBody::from(body.to_string()),
    );
    response
        .headers_mut()
        .insert("content-type", "application/x-amz-json-1.0");
    response
        .headers_mut()
        .insert("x-amzn-requestid", uuid::Uuid::new_v4().to_string());
    response
}
