//! The HTTP side of the fake: routing, Meta's strictness, the knobs and the
//! request log.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an answer the fake withholds takes: longer than any client's
/// timeout (the tests' is at most 10 seconds).
const ANSWER_LOST_MS: u64 = 15_000;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

use adtrail_domain::time::{SharedClock, SystemClock};

use crate::agency::{SampleAccount, sample_accounts};
use crate::capi::AcceptedEvent;
use crate::graph::{graph_get, post_events};
use crate::knobs::{Knobs, RecordedRequest};
use crate::wire::{VERSION, bad_param, meta_error};

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) knobs: Knobs,
    pub(crate) requests: Vec<RecordedRequest>,
    pub(crate) dead_tokens: HashSet<String>,
    /// Login codes already traded: a code works once.
    pub(crate) used_codes: HashSet<String>,
    pub(crate) accepted: Vec<AcceptedEvent>,
    /// Events accepted by requests whose answer was then never sent.
    pub(crate) unanswered: usize,
    pub(crate) rng: u64,
    /// Pages whose `leadgen` field the app is subscribed to.
    pub(crate) subscribed_pages: HashSet<String>,
    /// Form leads submitted, by `leadgen_id`.
    pub(crate) form_leads: BTreeMap<String, crate::leads::StoredLead>,
    pub(crate) next_lead: u64,
    /// The stack's webhook, where submitted leads are announced.
    pub(crate) webhook_url: Option<String>,
    /// Webhook bodies held back to deliver late.
    pub(crate) held_deliveries: Vec<String>,
}

pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) accounts: Vec<SampleAccount>,
    pub(crate) base_url: String,
    /// Meta's "now" for the 7-day rule: the caller's clock, so tests on a
    /// virtual clock see the rule as production does.
    pub(crate) clock: SharedClock,
}

/// A random fault drawn for one request.
pub(crate) enum Fault {
    Unavailable,
    Throttled,
    Timeout(u64),
    /// The request is carried out, then its answer never comes in time.
    AcceptThenTimeout(u64),
}

impl Inner {
    /// xorshift64*: deterministic for a seed, no crate needed.
    fn next_random(&mut self) -> u64 {
        let mut x = self.rng.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn draw_fault(&mut self, path: &str) -> Option<Fault> {
        let events = path.ends_with("/events");
        if events && self.knobs.accept_then_timeout > 0 {
            self.knobs.accept_then_timeout -= 1;
            return Some(Fault::AcceptThenTimeout(ANSWER_LOST_MS));
        }
        let faults = self.knobs.random_faults.clone()?;
        if faults
            .only_path
            .as_ref()
            .is_some_and(|p| !path.contains(p.as_str()))
        {
            return None;
        }
        if self.rng == 0 {
            self.rng = faults.seed.max(1);
        }
        if self.next_random() % 100 >= u64::from(faults.pct) {
            return None;
        }
        let kinds = if faults.accept_then_timeout && events {
            4
        } else {
            3
        };
        Some(match self.next_random() % kinds {
            0 => Fault::Unavailable,
            1 => Fault::Throttled,
            2 => Fault::Timeout(faults.timeout_ms),
            _ => Fault::AcceptThenTimeout(faults.timeout_ms),
        })
    }
}

/// A running fake Graph API.
#[derive(Clone)]
pub struct FakeMeta {
    pub(crate) shared: Arc<Shared>,
    pub(crate) addr: SocketAddr,
}

impl FakeMeta {
    /// Serves on `addr` (port 0 for any free port) until the runtime ends.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start(addr: SocketAddr) -> std::io::Result<Self> {
        Self::start_with_clock(addr, Arc::new(SystemClock)).await
    }

    /// Serves with `clock` as Meta's "now".
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn start_with_clock(addr: SocketAddr, clock: SharedClock) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner::default()),
            accounts: sample_accounts(),
            base_url: format!("http://{addr}"),
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
}

/// One call to the fake, as it came.
struct Call<'a> {
    method: &'a Method,
    path: &'a str,
    query: &'a BTreeMap<String, String>,
    auth: Option<&'a str>,
    body: &'a [u8],
}

/// The call's answer, through the fault drawn for it: Meta failing,
/// throttling, timing out, or taking the call and never answering.
async fn answer_with(shared: &Shared, fault: Option<Fault>, call: &Call<'_>) -> Response {
    match fault {
        Some(Fault::Unavailable) => meta_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            1,
            None,
            "An unknown error occurred",
            true,
        ),
        Some(Fault::Throttled) => meta_error(
            StatusCode::BAD_REQUEST,
            17,
            None,
            "User request limit reached",
            true,
        ),
        Some(Fault::Timeout(ms)) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Some(Fault::AcceptThenTimeout(ms)) => {
            let before = shared.inner.lock().map(|i| i.accepted.len()).unwrap_or(0);
            let answer = route(shared, call);
            if let Ok(mut inner) = shared.inner.lock() {
                inner.unanswered += inner.accepted.len() - before;
            }
            // The caller gives up first; this answer is never read.
            tokio::time::sleep(Duration::from_millis(ms)).await;
            answer
        }
        None => route(shared, call),
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    if method == Method::POST && path == "/_fake/leads" {
        return crate::leads::submit(&shared, &body).await;
    }
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let knobs = shared
        .inner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .knobs
        .clone();
    if knobs.latency_ms > 0 && !path.starts_with("/_fake/") {
        tokio::time::sleep(Duration::from_millis(knobs.latency_ms)).await;
    }
    if knobs
        .slow_path
        .as_ref()
        .is_some_and(|p| path.ends_with(p.as_str()))
    {
        tokio::time::sleep(Duration::from_millis(knobs.slow_ms)).await;
    }
    let fault = if path.starts_with("/_fake/") {
        None
    } else {
        shared
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .draw_fault(&path)
    };
    let call = Call {
        method: &method,
        path: &path,
        query: &query,
        auth: authorization.as_deref(),
        body: &body,
    };
    let response = answer_with(&shared, fault, &call).await;
    let status = response.status().as_u16();
    if !path.starts_with("/_fake/") {
        shared
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .requests
            .push(RecordedRequest {
                method: method.to_string(),
                path,
                query: uri.query().unwrap_or("").to_owned(),
                authorization,
                status,
            });
    }
    response
}

fn route(shared: &Shared, call: &Call<'_>) -> Response {
    let (method, path, query, auth, body) =
        (call.method, call.path, call.query, call.auth, call.body);
    if let Some(answer) = crate::control::over_http(shared, method, path, body)
        .or_else(|| crate::graph::thumbnail(path))
    {
        return answer;
    }
    let Some(rest) = path.strip_prefix(&format!("/{VERSION}/")) else {
        return meta_error(
            StatusCode::BAD_REQUEST,
            2635,
            None,
            "Requests must name the Graph API version v25.0",
            false,
        );
    };
    if query.contains_key("access_token") {
        return bad_param("Pass the access token in the Authorization header, not in the URL");
    }
    // Facebook Login: the app's credentials in a form body, no user token.
    if (method, rest) == (&Method::POST, "oauth/access_token") {
        let form: BTreeMap<String, String> =
            url::form_urlencoded::parse(body).into_owned().collect();
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        let fail = inner.knobs.fail_token_exchange;
        return crate::login::access_token(&form, &mut inner.used_codes, fail);
    }
    if (method, rest) == (&Method::GET, "debug_token") {
        let app = auth.and_then(|a| a.strip_prefix("Bearer ")).unwrap_or("");
        return crate::login::debug_token(query, app, shared.clock.now_ms());
    }
    let Some(token) = auth
        .and_then(|a| a.strip_prefix("Bearer "))
        .filter(|t| !t.is_empty())
    else {
        return meta_error(
            StatusCode::BAD_REQUEST,
            2500,
            None,
            "An active access token must be used to query this resource",
            false,
        );
    };
    let usage_header = match crate::refusals::refuse(shared, token, path) {
        Ok(header) => header,
        Err(refused) => return *refused,
    };
    let knobs = shared
        .inner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .knobs
        .clone();
    let mut response = answer(shared, method, rest, query, token, body, &knobs);
    if let Some(h) = usage_header {
        response
            .headers_mut()
            .insert("x-app-usage", HeaderValue::from_str(&h).expect("ascii"));
    }
    response
}

/// A Graph call's answer, once the caller's token was taken: the
/// Conversions API, the Lead Ads edges, or a read of the agency's objects.
fn answer(
    shared: &Shared,
    method: &Method,
    rest: &str,
    query: &BTreeMap<String, String>,
    token: &str,
    body: &[u8],
    knobs: &Knobs,
) -> Response {
    let fields = query.get("fields").map(String::as_str);
    let subscribed = query.get("subscribed_fields").map(String::as_str);
    if method == Method::POST
        && let Some(pixel) = rest.strip_suffix("/events")
    {
        post_events(shared, pixel, body, knobs)
    } else if let Some(answer) =
        crate::pages::subscribed_apps(shared, method, rest, token, subscribed)
    {
        answer
    } else if method != Method::GET {
        bad_param("Unsupported post request")
    } else if let Some(answer) = crate::leads::read_lead(shared, rest, fields, token) {
        answer
    } else if let Some(answer) = crate::forms::list_forms(shared, rest, query, knobs, token) {
        answer
    } else if let Some(answer) = crate::forms::list_form_leads(shared, rest, query, knobs, token) {
        answer
    } else {
        graph_get(shared, rest, query, knobs, token)
    }
}
