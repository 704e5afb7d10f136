//! A stand-in for the Lambda Runtime API, so a test runs a function's real
//! `main` (the release of `lambda_runtime`, the log subscriber, the client
//! setup) as Lambda does: the binary is started with
//! `AWS_LAMBDA_RUNTIME_API` pointing here, asks for its next invocation,
//! and posts the answer back. Everything the process writes (stdout and
//! stderr, where Lambda's logs go) is kept for the test to search.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;

#[derive(Default)]
struct Inner {
    pending: VecDeque<(String, Value)>,
    results: HashMap<String, Result<Value, Value>>,
    init_error: Option<String>,
}

#[derive(Clone, Default)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    queued: Arc<Notify>,
    answered: Arc<Notify>,
}

/// One function's process and its Runtime API.
pub struct Function {
    shared: Shared,
    child: tokio::process::Child,
    /// Every line the process wrote.
    pub output: Arc<Mutex<Vec<String>>>,
}

/// The directory cargo put the workspace's binaries in (this test's
/// executable sits in its `deps`).
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    dir.join(name)
}

async fn next(State(s): State<Shared>) -> Response {
    loop {
        let notified = s.queued.notified();
        if let Some((id, event)) = s.inner.lock().unwrap().pending.pop_front() {
            let mut headers = HeaderMap::new();
            let deadline = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                // The sync worker's timeout (Lambda's longest): it starts
                // no Meta read within a minute of its deadline.
                + 900_000;
            let h = |v: &str| HeaderValue::from_str(v).expect("header");
            headers.insert("lambda-runtime-aws-request-id", h(&id));
            headers.insert("lambda-runtime-deadline-ms", h(&deadline.to_string()));
            headers.insert(
                "lambda-runtime-invoked-function-arn",
                h("arn:aws:lambda:us-east-1:000000000000:function:local"),
            );
            headers.insert(
                "lambda-runtime-trace-id",
                h("Root=1-00000000-000000000000000000000000"),
            );
            headers.insert("content-type", h("application/json"));
            return (StatusCode::OK, headers, event.to_string()).into_response();
        }
        notified.await;
    }
}

async fn respond(State(s): State<Shared>, Path(id): Path<String>, body: String) -> StatusCode {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    s.inner.lock().unwrap().results.insert(id, Ok(value));
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

async fn fail(State(s): State<Shared>, Path(id): Path<String>, body: String) -> StatusCode {
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    s.inner.lock().unwrap().results.insert(id, Err(value));
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

async fn init_error(State(s): State<Shared>, body: String) -> StatusCode {
    s.inner.lock().unwrap().init_error = Some(body);
    s.answered.notify_waiters();
    StatusCode::ACCEPTED
}

impl Function {
    /// Starts `binary` with `env` (the stack's names, the log level) and a
    /// Runtime API of its own.
    pub async fn start(binary: PathBuf, env: &[(String, String)]) -> Self {
        let shared = Shared::default();
        let app = Router::new()
            .route("/2018-06-01/runtime/invocation/next", get(next))
            .route(
                "/2018-06-01/runtime/invocation/{id}/response",
                post(respond),
            )
            .route("/2018-06-01/runtime/invocation/{id}/error", post(fail))
            .route("/2018-06-01/runtime/init/error", post(init_error))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move { axum::serve(listener, app).await });
        let name = binary
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut child = tokio::process::Command::new(&binary)
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", &name)
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", binary.display()));
        let output = Arc::new(Mutex::new(vec![]));
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let output = output.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    output.lock().unwrap().push(line);
                }
            });
        }
        Self {
            shared,
            child,
            output,
        }
    }

    /// Invokes the function with `event`: its answer, or the error it
    /// posted. Panics after a minute without one.
    pub async fn invoke(&self, event: Value) -> Result<Value, Value> {
        self.invoke_within(event, Duration::from_secs(60)).await
    }

    /// [`Function::invoke`], waiting up to `limit` for the answer: for an
    /// invocation whose work is long by design (a sync worker reading
    /// Meta's largest parts), still well inside the deadline the Runtime
    /// API gives it.
    pub async fn invoke_within(&self, event: Value, limit: Duration) -> Result<Value, Value> {
        let id = uuid::Uuid::new_v4().to_string();
        self.shared
            .inner
            .lock()
            .unwrap()
            .pending
            .push_back((id.clone(), event));
        self.shared.queued.notify_waiters();
        let wait = async {
            loop {
                let answered = self.shared.answered.notified();
                {
                    let mut inner = self.shared.inner.lock().unwrap();
                    if let Some(e) = &inner.init_error {
                        return Err(Value::String(format!("init failed: {e}")));
                    }
                    if let Some(r) = inner.results.remove(&id) {
                        return r;
                    }
                }
                // The first `next` may come before this invocation queued.
                self.shared.queued.notify_waiters();
                tokio::select! {
                    () = answered => {}
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        };
        tokio::time::timeout(limit, wait).await.unwrap_or_else(|_| {
            panic!(
                "no answer in {} s; the process wrote:\n{}",
                limit.as_secs(),
                self.output.lock().unwrap().join("\n")
            )
        })
    }

    /// The process's peak resident memory so far (`VmHWM`), in KiB: what
    /// Lambda holds against the function's memory size.
    pub fn peak_memory_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// Everything the process wrote so far.
    pub fn written(&self) -> String {
        self.output.lock().unwrap().join("\n")
    }

    pub async fn stop(mut self) -> String {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        // Let the readers take the last lines.
        tokio::time::sleep(Duration::from_millis(100)).await;
        self.written()
    }
}

/// The namespace the functions write their metrics under in the tests.
pub const METRICS_NAMESPACE: &str = "adtrail/runtime-test";

/// The stack's names and the fake's address, as the template gives them.
pub fn stack_env(h: &crate::Harness) -> Vec<(String, String)> {
    let n = &h.store().names;
    let mut env = vec![
        // The emulator this stack lives on (the run may have several).
        ("AWS_ENDPOINT_URL", h.app.moto.url.clone()),
        ("TABLE_NAME", n.table.clone()),
        ("SYNC_QUEUE_URL", n.sync_queue_url.clone()),
        ("SEND_QUEUE_URL", n.send_queue_url.clone()),
        ("BUS_NAME", n.bus.clone()),
        ("KEY_ID", n.key_id.clone()),
        ("THUMBNAIL_BUCKET", n.bucket.clone()),
        (
            "META_APP_SECRET_ID",
            n.meta_app_secret.clone().unwrap_or_default(),
        ),
        ("META_GRAPH_URL", h.fake().url()),
        ("TIKTOK_API_URL", format!("{}/tiktok", h.platforms().url())),
        (
            "PINTEREST_API_URL",
            format!("{}/pinterest", h.platforms().url()),
        ),
        ("SNAP_API_URL", format!("{}/snap", h.platforms().url())),
        (
            "GOOGLE_DATAMANAGER_URL",
            format!("{}/google", h.platforms().url()),
        ),
        ("GOOGLE_OAUTH_URL", format!("{}/oauth", h.platforms().url())),
        ("LEAD_ADS", "on".into()),
        (
            "LEADGEN_QUEUE_URL",
            n.leadgen_queue_url.clone().unwrap_or_default(),
        ),
        ("METRICS_NAMESPACE", METRICS_NAMESPACE.into()),
        ("AWS_LAMBDA_LOG_LEVEL", "trace".into()),
        ("AWS_LAMBDA_LOG_FORMAT", "json".into()),
    ];
    env.push(("RUST_LOG", "trace".into()));
    env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
