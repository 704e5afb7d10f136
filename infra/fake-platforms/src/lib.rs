//! The fake conversion APIs of TikTok, Pinterest, Snap and Google's Data
//! Manager, one HTTP server with a path prefix each (`/tiktok`, …), as
//! strict as each platform's documentation on what it states:
//! authentication, the request's shape, events per request, whole-batch
//! versus per-event failure, error codes, the events' age and test mode.
//! What it accepts is recorded for the tests; knobs inject the faults the
//! platforms return (unavailable, throttled, timeouts, an answer lost
//! after the events were taken), as the fake Meta's do.

mod google;
mod google_sa;
mod shared_checks;
pub(crate) use shared_checks::{event_id, fault_answer};
mod pinterest;
mod snap;
mod tiktok;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adtrail_domain::time::{SharedClock, SystemClock};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{Value, json};

/// The tokens each platform knows from the start (the demo's and the
/// tests').
pub const TIKTOK_TOKEN: &str = "tiktok-token-0001";
pub const PINTEREST_TOKEN: &str = "pinterest-token-0001";
pub const SNAP_TOKEN: &str = "snap-token-0001";
pub use google::{GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_REFRESH_TOKEN};
pub use google_sa::{GOOGLE_SERVICE_ACCOUNT, ServiceAccountKey};

/// An event a platform took.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// `tiktok`, `pinterest`, `snap`, `google`.
    pub platform: &'static str,
    /// The pixel, ad account or operating account it went to.
    pub account: String,
    pub event_id: String,
    pub event_name: String,
    /// The event as the platform received it.
    pub event: Value,
    /// The test code or flag it came with, if any.
    pub test: Option<String>,
}

/// Random faults, drawn per request.
#[derive(Debug, Clone)]
pub struct Faults {
    /// Percent of requests that fail.
    pub pct: u8,
    pub seed: u64,
    /// How long a timeout holds the answer.
    pub timeout_ms: u64,
}

/// What the tests turn.
#[derive(Debug, Clone, Default)]
pub struct Knobs {
    /// Event ids the platform calls invalid.
    pub reject_event_ids: Vec<String>,
    pub random_faults: Option<Faults>,
    /// The next N event requests are carried out, then their answer is
    /// lost.
    pub accept_then_timeout: usize,
}

/// A random fault for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    Unavailable,
    Throttled,
    Timeout(u64),
    AcceptThenTimeout(u64),
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) knobs: Knobs,
    pub(crate) tokens: HashSet<String>,
    pub(crate) accepted: Vec<Accepted>,
    pub(crate) requests: usize,
    /// Event requests by platform (`tiktok`, …).
    requests_by: std::collections::BTreeMap<&'static str, usize>,
    pub(crate) unanswered: usize,
    /// Google's access tokens and when they expire (seconds).
    pub(crate) access_tokens: std::collections::HashMap<String, i64>,
    /// Refresh tokens and assertions traded at Google's token endpoint.
    pub(crate) token_grants: usize,
    /// The service accounts Google knows.
    pub(crate) service_accounts: Vec<ServiceAccountKey>,
    rng: u64,
}

impl Inner {
    /// The answer of a request that took `taken` events: late, after the
    /// client gave up, when the fault drawn says to take them and never
    /// answer.
    pub(crate) fn answered(
        &mut self,
        fault: Option<Fault>,
        taken: usize,
        answer: Answer,
    ) -> Answer {
        match fault {
            Some(Fault::AcceptThenTimeout(ms)) => {
                self.unanswered += taken;
                Answer {
                    delay_ms: ms,
                    ..answer
                }
            }
            _ => answer,
        }
    }

    /// Counts an event request to `platform`.
    pub(crate) fn count_request(&mut self, platform: &'static str) {
        self.requests += 1;
        *self.requests_by.entry(platform).or_default() += 1;
    }

    fn next_random(&mut self) -> u64 {
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(crate) fn draw_fault(&mut self) -> Option<Fault> {
        if self.knobs.accept_then_timeout > 0 {
            self.knobs.accept_then_timeout -= 1;
            return Some(Fault::AcceptThenTimeout(15_000));
        }
        let faults = self.knobs.random_faults.clone()?;
        if self.rng == 0 {
            self.rng = faults.seed.max(1);
        }
        if self.next_random() % 100 >= u64::from(faults.pct) {
            return None;
        }
        Some(match self.next_random() % 4 {
            0 => Fault::Unavailable,
            1 => Fault::Throttled,
            2 => Fault::Timeout(faults.timeout_ms),
            _ => Fault::AcceptThenTimeout(faults.timeout_ms),
        })
    }
}

pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    /// The platforms' "now", for their age limits.
    pub(crate) clock: SharedClock,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn now_s(&self) -> i64 {
        self.clock.now_ms().div_euclid(1_000)
    }
}

/// A running fake.
#[derive(Clone)]
pub struct FakePlatforms {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

impl FakePlatforms {
    /// Serves on `addr` (port 0: any free port) with `clock` as the
    /// platforms' "now".
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start(addr: SocketAddr, clock: SharedClock) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let mut inner = Inner::default();
        for token in [TIKTOK_TOKEN, PINTEREST_TOKEN, SNAP_TOKEN] {
            inner.tokens.insert(token.to_owned());
        }
        inner.tokens.insert(google_credentials(
            GOOGLE_CLIENT_ID,
            GOOGLE_CLIENT_SECRET,
            GOOGLE_REFRESH_TOKEN,
        ));
        inner
            .service_accounts
            .push(ServiceAccountKey::generate(GOOGLE_SERVICE_ACCOUNT));
        let shared = Arc::new(Shared {
            inner: Mutex::new(inner),
            clock,
        });
        let app = Router::new()
            .route("/{*path}", any(handle))
            .with_state(shared.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { shared, addr })
    }

    /// On the wall clock.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start_now(addr: SocketAddr) -> std::io::Result<Self> {
        Self::start(addr, Arc::new(SystemClock)).await
    }

    /// `http://127.0.0.1:PORT`: each platform under its prefix.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
    /// Every event taken so far, all platforms.
    pub fn accepted(&self) -> Vec<Accepted> {
        self.shared.lock().accepted.clone()
    }
    /// Event requests served so far.
    pub fn requests(&self) -> usize {
        self.shared.lock().requests
    }
    /// Event requests served so far to `platform` (`tiktok`, `pinterest`,
    /// `snap`, `google`).
    pub fn requests_to(&self, platform: &str) -> usize {
        self.shared
            .lock()
            .requests_by
            .get(platform)
            .copied()
            .unwrap_or(0)
    }
    /// Events taken by requests whose answer was then lost.
    pub fn unanswered(&self) -> usize {
        self.shared.lock().unanswered
    }
    pub fn set_knobs(&self, knobs: Knobs) {
        self.shared.lock().knobs = knobs;
    }
    /// A token the platforms take from now on.
    pub fn grant_token(&self, token: &str) {
        self.shared.lock().tokens.insert(token.to_owned());
    }
    /// Google credentials the token endpoint takes from now on.
    pub fn grant_google(&self, client_id: &str, client_secret: &str, refresh_token: &str) {
        self.shared.lock().tokens.insert(google_credentials(
            client_id,
            client_secret,
            refresh_token,
        ));
    }
    /// Google credentials revoked from now on.
    pub fn revoke_google(&self, client_id: &str, client_secret: &str, refresh_token: &str) {
        self.shared.lock().tokens.remove(&google_credentials(
            client_id,
            client_secret,
            refresh_token,
        ));
    }
    /// The key of the service account the fake knows from the start
    /// ([`GOOGLE_SERVICE_ACCOUNT`]), made when it started.
    pub fn google_service_account(&self) -> ServiceAccountKey {
        self.shared.lock().service_accounts[0].clone()
    }
    /// A service account's key Google takes from now on.
    pub fn grant_service_account(&self, key: &ServiceAccountKey) {
        self.shared.lock().service_accounts.push(key.clone());
    }
    /// Refresh tokens and assertions traded so far.
    pub fn token_grants(&self) -> usize {
        self.shared.lock().token_grants
    }
    /// A token refused from now on (revoked).
    pub fn kill_token(&self, token: &str) {
        self.shared.lock().tokens.remove(token);
    }
}

/// A request as the handlers see it.
pub(crate) struct Request<'a> {
    pub(crate) method: &'a Method,
    pub(crate) query: &'a str,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let req = Request {
        method: &method,
        query: uri.query().unwrap_or(""),
        headers: &headers,
        body: &body,
    };
    let answer = if let Some(rest) = path.strip_prefix("/tiktok") {
        tiktok::handle(&shared, &req, rest)
    } else if let Some(rest) = path.strip_prefix("/pinterest") {
        pinterest::handle(&shared, &req, rest)
    } else if let Some(rest) = path.strip_prefix("/snap") {
        snap::handle(&shared, &req, rest)
    } else if let Some(rest) = path.strip_prefix("/google") {
        google::ingest(&shared, &req, rest)
    } else if let Some(rest) = path.strip_prefix("/oauth") {
        google::token(&shared, &req, rest)
    } else {
        None
    };
    let Some(answer) = answer else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"message": "no such route"})),
        )
            .into_response();
    };
    match answer.delay_ms {
        0 => {}
        ms => tokio::time::sleep(Duration::from_millis(ms)).await,
    }
    (answer.status, Json(answer.body)).into_response()
}

/// A handler's answer, and how long it is held back (a timeout).
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Value,
    pub(crate) delay_ms: u64,
}

impl Answer {
    pub(crate) fn new(status: StatusCode, body: Value) -> Self {
        Answer {
            status,
            body,
            delay_ms: 0,
        }
    }
}

/// A SHA-256 in lowercase hex.
pub(crate) fn is_digest(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// A non-empty array of SHA-256 digests (Meta's, Pinterest's and Snap's
/// `em`, `ph`, …).
pub(crate) fn hashed_list(v: &Value) -> bool {
    v.as_array()
        .is_some_and(|a| !a.is_empty() && a.iter().all(is_digest))
}

/// How the fake keeps a Google OAuth client and refresh token among its
/// live credentials.
fn google_credentials(client_id: &str, secret: &str, refresh: &str) -> String {
    format!("{client_id}|{secret}|{refresh}")
}
