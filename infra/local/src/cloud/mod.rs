//! The cloud's strictness, which moto does not have. Every function of the
//! local stack gets its own SDK clients whose HTTP client is a [`Gate`]:
//! before a request reaches moto, the gate reads it ([`calls`]), judges it
//! against that function's role and the key policy in `template.yaml`
//! ([`policy`]), refuses it with AWS's own `AccessDenied` answer when the
//! role lacks a grant, and may fail it the way DynamoDB fails under load
//! ([`faults`]). What it saw is kept in a [`CallLog`]: calls per function
//! and operation, the grants they used, the refusals.
//!
//! The gate sits where the SDK hands a signed request to the network, not
//! in an interceptor, because only there can it answer in AWS's place: the
//! SDK then parses its answers into the same errors the cloud produces and
//! applies the same retry policy.

pub mod calls;
pub mod faults;
pub mod policy;
mod resolve;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use serde::{Deserialize, Serialize};

use calls::{Call, Target};
use faults::Faults;
use policy::{Grant, Policy, canonical};

/// Physical names of the local stack → canonical ARNs by logical id.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    pub tables: BTreeMap<String, String>,
    /// By queue name (the URL's last segment).
    pub queues: BTreeMap<String, String>,
    pub keys: BTreeMap<String, String>,
    pub buses: BTreeMap<String, String>,
    pub buckets: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
}

impl Resources {
    /// The canonical ARN of what a request names; an unknown name stays
    /// as it is and so matches no grant.
    pub fn arn(&self, target: &Target) -> String {
        let find = |map: &BTreeMap<String, String>, name: &str, kind: &str| {
            map.get(name)
                .map_or_else(|| format!("unknown:{name}"), |l| canonical(kind, l))
        };
        match target {
            Target::Table { name, index } => {
                let table = find(&self.tables, name, "AWS::DynamoDB::Table");
                match index {
                    Some(i) => format!("{table}/index/{i}"),
                    None => table,
                }
            }
            Target::Queue { url } => find(
                &self.queues,
                url.rsplit('/').next().unwrap_or_default(),
                "AWS::SQS::Queue",
            ),
            Target::Key { id } => find(&self.keys, id, "AWS::KMS::Key"),
            Target::Bus { name } => find(&self.buses, name, "AWS::Events::EventBus"),
            Target::Object { bucket, key } => {
                let b = find(&self.buckets, bucket, "AWS::S3::Bucket");
                key.as_ref().map_or(b.clone(), |k| format!("{b}/{k}"))
            }
            Target::Secret { id } => find(&self.secrets, id, "Parameter"),
        }
    }
}

/// What the gates of one stack saw.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CallReport {
    /// `function → "service:Operation" → count`.
    pub calls: BTreeMap<String, BTreeMap<String, u64>>,
    pub used: BTreeSet<Grant>,
    /// Each refused call, said in full.
    pub refused: Vec<String>,
    /// Faults injected, by kind.
    pub faults: BTreeMap<String, u64>,
}

/// The policy, the names and the log the gates of one stack share.
#[derive(Debug, Default)]
pub struct Cloud {
    pub policy: Policy,
    pub resources: Resources,
    pub faults: Faults,
    log: Mutex<CallReport>,
    /// Sender recordings still to kill, and the ones killed (by their
    /// request's body, so every retry of one dies too).
    kills_left: std::sync::atomic::AtomicU32,
    /// The same for the API's puts of a posted batch's rows.
    row_kills_left: std::sync::atomic::AtomicU32,
    killed: Mutex<HashSet<String>>,
    /// Eventually consistent reads still to answer as stale: the sort key
    /// prefix of the items they read, and how many.
    stale_gets: Mutex<Option<(String, u32)>>,
    /// A network round trip added to each call that reaches moto (a
    /// bench's, in microseconds): on this machine a request costs moto's
    /// time alone, in a region it also costs the trip.
    round_trip_us: std::sync::atomic::AtomicU64,
}

impl Cloud {
    pub fn new(policy: Policy, resources: Resources, faults: Faults) -> Self {
        Self {
            policy,
            resources,
            faults,
            ..Self::default()
        }
    }

    /// Adds `trip` to every call from now on, before its answer.
    pub fn set_round_trip(&self, trip: std::time::Duration) {
        let us = u64::try_from(trip.as_micros()).unwrap_or(u64::MAX);
        self.round_trip_us
            .store(us, std::sync::atomic::Ordering::Relaxed);
    }

    /// The sender's next `n` row ends (the update that marks a row sent,
    /// failed or due again, after the receipt that counted it) never reach
    /// DynamoDB, through every retry: a sender that dies between counting
    /// its ends and writing them on the rows.
    pub fn kill_recordings(&self, n: u32) {
        self.kills_left
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// The API's next `n` puts of a posted batch's rows (after the
    /// transaction that counted them) never reach DynamoDB, through every
    /// retry: an API that dies between counting a batch and writing it.
    pub fn kill_posted_rows(&self, n: u32) {
        self.row_kills_left
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// The next `n` eventually consistent reads (`GetItem`, and
    /// `BatchGetItem`s of one table whose keys all match) of items whose
    /// partition or sort key starts with `prefix` answer as a read of the
    /// items' past before they were written would: nothing. DynamoDB's
    /// eventual reads may miss the last second's writes, which moto's never
    /// do; strong reads are never stale.
    pub fn stale_gets(&self, prefix: &str, n: u32) {
        if let Ok(mut stale) = self.stale_gets.lock() {
            *stale = Some((prefix.to_owned(), n));
        }
    }

    /// The stale answers [`Self::stale_gets`] has still to give.
    pub fn stale_gets_left(&self) -> u32 {
        self.stale_gets
            .lock()
            .ok()
            .and_then(|s| s.as_ref().map(|(_, n)| *n))
            .unwrap_or(0)
    }

    /// A stale answer to an eventual read, while [`Self::stale_gets`] has
    /// any left for its item.
    fn stale(&self, call: &Call, body: &[u8]) -> Option<HttpResponse> {
        let request: serde_json::Value = serde_json::from_slice(body).ok()?;
        // The keys read, whether strongly, and the answer of a read of
        // their past.
        let (keys, consistent, answer) = match call.operation.as_str() {
            "GetItem" => (
                vec![request["Key"].clone()],
                request["ConsistentRead"].as_bool(),
                serde_json::json!({}),
            ),
            "BatchGetItem" => {
                let tables = request["RequestItems"].as_object()?;
                let (table, read) = tables.iter().next().filter(|_| tables.len() == 1)?;
                (
                    read["Keys"].as_array()?.clone(),
                    read["ConsistentRead"].as_bool(),
                    serde_json::json!({"Responses": {table.as_str(): []}, "UnprocessedKeys": {}}),
                )
            }
            _ => return None,
        };
        if consistent == Some(true) {
            return None;
        }
        let mut stale = self.stale_gets.lock().ok()?;
        let (prefix, left) = stale.as_mut()?;
        let matches = |key: &serde_json::Value| {
            ["pk", "sk"].iter().any(|k| {
                key[*k]["S"]
                    .as_str()
                    .is_some_and(|v| v.starts_with(prefix.as_str()))
            })
        };
        if *left == 0 || keys.is_empty() || !keys.iter().all(matches) {
            return None;
        }
        *left -= 1;
        Some(faults::dynamodb_response(200, &answer))
    }

    /// Recordings and rows killed so far.
    pub fn killed_recordings(&self) -> usize {
        self.killed.lock().map(|k| k.len()).unwrap_or(0)
    }

    fn kill(&self, function: &str, call: &Call, body: &[u8]) -> Option<HttpResponse> {
        let text = std::str::from_utf8(body).ok()?;
        let left = match (function, call.operation.as_str()) {
            ("CapiSenderFunction", "UpdateItem")
                if text.contains("SET #status = :sent")
                    || text.contains("SET #status = :failed")
                    || text.contains("SET nextAttemptAt = :at, workAt = :at") =>
            {
                &self.kills_left
            }
            ("ApiFunction", "PutItem") if text.contains("\"S\":\"conv#") => &self.row_kills_left,
            _ => return None,
        };
        // An update has no idempotency token: the SDK sends the same body
        // on each retry, which is how one is known again.
        let token = text.to_owned();
        let mut killed = self.killed.lock().ok()?;
        if !killed.contains(&token) {
            let took = left
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok();
            if !took {
                return None;
            }
            killed.insert(token);
        }
        Some(faults::dynamodb_response(
            500,
            &serde_json::json!({
                "__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
                "message": "Internal server error",
            }),
        ))
    }

    /// The log so far, with the faults injected.
    pub fn report(&self) -> CallReport {
        let mut report = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        report.faults = self
            .faults
            .injected()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        report
    }

    /// Judges one call of `function`: `Err` names the first missing grant.
    pub fn judge(&self, function: &str, call: &Call) -> Result<(), String> {
        let mut used = vec![];
        let mut refusal = None;
        for need in &call.needs {
            let resource = self.resources.arn(&need.target);
            match self.policy.judge(function, need, &resource, call) {
                Ok(grants) => used.extend(grants),
                Err(r) => {
                    refusal.get_or_insert(r);
                }
            }
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        *log.calls
            .entry(function.to_owned())
            .or_default()
            .entry(format!("{}:{}", call.service, call.operation))
            .or_default() += 1;
        log.used.extend(used);
        match refusal {
            None => Ok(()),
            Some(r) => {
                let said = format!("{function} called {}:{}: {r}", call.service, call.operation);
                tracing::warn!(refused = %said, "a call the role does not allow");
                log.refused.push(said.clone());
                Err(said)
            }
        }
    }

    /// An HTTP client for `function`'s SDK clients, wrapping `inner`.
    pub fn gate(self: &Arc<Self>, function: &str, inner: SharedHttpClient) -> SharedHttpClient {
        SharedHttpClient::new(Gate {
            function: function.to_owned(),
            cloud: self.clone(),
            inner,
        })
    }
}

/// One function's way to the network.
#[derive(Debug, Clone)]
pub struct Gate {
    function: String,
    cloud: Arc<Cloud>,
    inner: SharedHttpClient,
}

impl HttpClient for Gate {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(GateConnector {
            gate: self.clone(),
            inner: self.inner.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct GateConnector {
    gate: Gate,
    inner: SharedHttpConnector,
}

impl HttpConnector for GateConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let body = request.body().bytes().unwrap_or_default();
        let target = request.headers().get("x-amz-target");
        let cloud = &self.gate.cloud;
        let Some(call) = calls::read(request.method(), request.uri(), target, body) else {
            let said = format!(
                "{} made a request the gate cannot judge: {} {}",
                self.gate.function,
                request.method(),
                request.uri()
            );
            if let Ok(mut log) = cloud.log.lock() {
                log.refused.push(said.clone());
            }
            return HttpConnectorFuture::ready(Ok(denied(None, &said)));
        };
        if let Err(said) = cloud.judge(&self.gate.function, &call) {
            return HttpConnectorFuture::ready(Ok(denied(Some(&call), &said)));
        }
        if let Some(answer) = cloud.kill(&self.gate.function, &call, body) {
            return HttpConnectorFuture::ready(Ok(answer));
        }
        if let Some(answer) = cloud.stale(&call, body) {
            return HttpConnectorFuture::ready(Ok(answer));
        }
        if let Some(answer) = cloud.faults.inject(&call, body) {
            return HttpConnectorFuture::ready(Ok(answer));
        }
        let answer = self.inner.call(request);
        match cloud
            .round_trip_us
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => answer,
            us => HttpConnectorFuture::new(async move {
                tokio::time::sleep(std::time::Duration::from_micros(us)).await;
                answer.await
            }),
        }
    }
}

/// AWS's refusal, in the service's own protocol.
fn denied(call: Option<&Call>, message: &str) -> HttpResponse {
    let message = format!("User is not authorized to perform this action: {message}");
    match call.map(|c| c.service) {
        Some("s3") | None => {
            let mut r = HttpResponse::new(
                StatusCode::try_from(403).expect("403"),
                SdkBody::from(format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>{}</Message></Error>",
                    message.replace('<', "&lt;").replace('&', "&amp;")
                )),
            );
            r.headers_mut().insert("content-type", "application/xml");
            r
        }
        Some(service) => {
            let mut r = faults::dynamodb_response(
                400,
                &serde_json::json!({
                    "__type": "AccessDeniedException",
                    "message": message,
                }),
            );
            if service == "sqs" {
                r.headers_mut()
                    .insert("x-amzn-query-error", "AccessDenied;Sender");
            }
            if service != "dynamodb" {
                r.headers_mut()
                    .insert("content-type", "application/x-amz-json-1.1");
            }
            r
        }
    }
}

#[cfg(test)]
mod tests;
