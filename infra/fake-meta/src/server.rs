//! The HTTP side of the fake: routing, Meta's strictness, the knobs and the
//! request log.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::{Json, Router};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use adtrail_domain::time::{SharedClock, SystemClock};

use crate::agency::{ME_ID, ME_NAME, SampleAccount, ad_day, decimal, sample_accounts};
use crate::capi::AcceptedEvent;

const VERSION: &str = "v25.0";
const INSIGHT_FIELDS: [&str; 13] = [
    "ad_id",
    "ad_name",
    "adset_id",
    "adset_name",
    "campaign_id",
    "campaign_name",
    "spend",
    "impressions",
    "clicks",
    "date_start",
    "date_stop",
    "account_id",
    "account_currency",
];

/// A throttle Meta answers with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Throttle {
    /// 4, 17 or 80000.
    pub code: i64,
    /// Requests still to refuse.
    pub remaining: u32,
    /// `estimated_time_to_regain_access`, minutes.
    pub regain_minutes: i64,
    /// Only requests whose path contains this are throttled.
    #[serde(default)]
    pub only_path: Option<String>,
}

/// A share of requests that fail at random (on a seeded generator, so a
/// run can be repeated): a 5xx, a throttle, or a timeout (the fake waits
/// `timeout_ms`, longer than the client's timeout, then answers 503 having
/// accepted nothing).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RandomFaults {
    pub pct: u32,
    pub seed: u64,
    pub timeout_ms: u64,
    /// Only requests whose path contains this fail.
    #[serde(default)]
    pub only_path: Option<String>,
}

/// Faults to inject. Defaults: none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Knobs {
    pub throttle: Option<Throttle>,
    /// The percentage every answer's `X-App-Usage` reports.
    pub usage_pct: Option<u32>,
    /// Requests still to answer with a 5xx.
    pub fail_5xx: u32,
    /// Above this many rows in one insights range, Meta asks to reduce data.
    pub row_cap: Option<usize>,
    pub latency_ms: u64,
    /// After this many more authorized calls, the token of the next call
    /// dies: it is refused like an expired token from then on.
    pub token_dies_after: Option<u32>,
    /// Largest page any list answers, whatever `limit` asks.
    pub max_page: Option<usize>,
    /// Refuse insights and ads as Meta does for a token without `ads_read`
    /// on the account (code 200).
    pub deny_permission: bool,
    /// Ad accounts whose pixels the token may not read (code 200).
    pub deny_pixels: Vec<String>,
    pub random_faults: Option<RandomFaults>,
    /// Conversions API events (by `event_id`) Meta calls invalid: a request
    /// holding one is rejected whole.
    pub reject_event_ids: Vec<String>,
    /// Ads that spent nothing lately and are archived: left out of the ads
    /// listing and of insights, answered only when asked for by id.
    pub archived_ads: Vec<String>,
    /// Refuse `POST /{pixel}/events` as Meta does for a token without
    /// access to the dataset (code 200).
    pub deny_events: bool,
    /// Refuse to trade a short-lived user token for a long-lived one.
    pub fail_token_exchange: bool,
}

/// One request the fake served.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
    pub status: u16,
}

#[derive(Default)]
struct Inner {
    knobs: Knobs,
    requests: Vec<RecordedRequest>,
    dead_tokens: HashSet<String>,
    /// Login codes already traded: a code works once.
    used_codes: HashSet<String>,
    accepted: Vec<AcceptedEvent>,
    rng: u64,
}

struct Shared {
    inner: Mutex<Inner>,
    accounts: Vec<SampleAccount>,
    base_url: String,
    /// Meta's "now" for the 7-day rule: the caller's clock, so tests on a
    /// virtual clock see the rule as production does.
    clock: SharedClock,
}

/// A random fault drawn for one request.
enum Fault {
    Unavailable,
    Throttled,
    Timeout(u64),
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
        Some(match self.next_random() % 3 {
            0 => Fault::Unavailable,
            1 => Fault::Throttled,
            _ => Fault::Timeout(faults.timeout_ms),
        })
    }
}

/// A running fake Graph API.
#[derive(Clone)]
pub struct FakeMeta {
    shared: Arc<Shared>,
    addr: SocketAddr,
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

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.shared.base_url.clone()
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Changes the knobs.
    pub fn set_knobs(&self, knobs: Knobs) {
        self.lock().knobs = knobs;
    }
    pub fn knobs(&self) -> Knobs {
        self.lock().knobs.clone()
    }
    /// Applies a change to the knobs.
    pub fn tune(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut self.lock().knobs);
    }
    /// Every request served so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }
    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }
    /// Every Conversions API event accepted so far.
    pub fn accepted_events(&self) -> Vec<AcceptedEvent> {
        self.lock().accepted.clone()
    }

    /// Refuses `token` from now on, like an expired token.
    pub fn kill_token(&self, token: &str) {
        self.lock().dead_tokens.insert(token.to_owned());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn meta_error(
    status: StatusCode,
    code: i64,
    subcode: Option<i64>,
    message: &str,
    transient: bool,
) -> Response {
    let mut err = json!({"message": message, "type": "OAuthException", "code": code, "is_transient": transient, "fbtrace_id": "AfakeTrace"});
    if let Some(sub) = subcode {
        err["error_subcode"] = json!(sub);
    }
    (status, Json(json!({ "error": err }))).into_response()
}

fn bad_param(message: &str) -> Response {
    meta_error(StatusCode::BAD_REQUEST, 100, None, message, false)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
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
    let fault = if path.starts_with("/_fake/") {
        None
    } else {
        shared
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .draw_fault(&path)
    };
    let response = match fault {
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
        None => route(
            &shared,
            &method,
            &path,
            &query,
            authorization.as_deref(),
            &body,
        ),
    };
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

fn route(
    shared: &Shared,
    method: &Method,
    path: &str,
    query: &BTreeMap<String, String>,
    auth: Option<&str>,
    body: &[u8],
) -> Response {
    // The fake's own controls.
    match (method, path) {
        (&Method::POST, "/_fake/knobs") => {
            return match serde_json::from_slice::<Knobs>(body) {
                Ok(k) => {
                    shared.inner.lock().unwrap_or_else(|e| e.into_inner()).knobs = k;
                    StatusCode::NO_CONTENT.into_response()
                }
                Err(_) => StatusCode::BAD_REQUEST.into_response(),
            };
        }
        (&Method::GET, "/_fake/requests") => {
            let inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
            return Json(json!(inner.requests)).into_response();
        }
        _ => {}
    }
    if let Some(ad) = path
        .strip_prefix("/thumbs/")
        .and_then(|p| p.strip_suffix(".png"))
    {
        if ad.bytes().all(|b| b.is_ascii_digit()) {
            return ([("content-type", "image/png")], PNG_1X1.to_vec()).into_response();
        }
        return StatusCode::NOT_FOUND.into_response();
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
    let mut usage_header = None;
    {
        let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
        if token.contains("invalid") || inner.dead_tokens.contains(token) {
            return meta_error(
                StatusCode::BAD_REQUEST,
                190,
                Some(463),
                "Error validating access token: Session has expired",
                false,
            );
        }
        if let Some(left) = inner.knobs.token_dies_after.as_mut() {
            if *left == 0 {
                inner.dead_tokens.insert(token.to_owned());
                inner.knobs.token_dies_after = None;
                return meta_error(
                    StatusCode::BAD_REQUEST,
                    190,
                    Some(463),
                    "Error validating access token: Session has expired",
                    false,
                );
            }
            *left -= 1;
        }
        if let Some(t) = inner.knobs.throttle.as_mut()
            && t.remaining > 0
            && t.only_path
                .as_ref()
                .is_none_or(|p| path.contains(p.as_str()))
        {
            t.remaining -= 1;
            let (code, regain) = (t.code, t.regain_minutes);
            let mut r = meta_error(
                StatusCode::BAD_REQUEST,
                code,
                None,
                "User request limit reached",
                true,
            );
            let buc = json!({"1029384756": [{"type": "ads_insights", "call_count": 100, "total_cputime": 100, "total_time": 100, "estimated_time_to_regain_access": regain}]});
            r.headers_mut().insert(
                "x-business-use-case-usage",
                HeaderValue::from_str(&buc.to_string()).expect("ascii"),
            );
            return r;
        }
        if inner.knobs.fail_5xx > 0 {
            inner.knobs.fail_5xx -= 1;
            return meta_error(
                StatusCode::SERVICE_UNAVAILABLE,
                2,
                None,
                "Service temporarily unavailable",
                true,
            );
        }
        if let Some(pct) = inner.knobs.usage_pct {
            usage_header = Some(
                json!({"call_count": pct, "total_cputime": pct / 2, "total_time": pct / 2})
                    .to_string(),
            );
        }
    }
    let knobs = shared
        .inner
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .knobs
        .clone();
    let mut response = if method == Method::POST
        && let Some(pixel) = rest.strip_suffix("/events")
    {
        post_events(shared, pixel, body, &knobs)
    } else if method != Method::GET {
        bad_param("Unsupported post request")
    } else {
        graph_get(shared, rest, query, &knobs)
    };
    if let Some(h) = usage_header {
        response
            .headers_mut()
            .insert("x-app-usage", HeaderValue::from_str(&h).expect("ascii"));
    }
    response
}

#[allow(clippy::result_large_err)] // the error is the answer itself
fn page_size(
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    default: usize,
) -> Result<usize, Response> {
    let limit = match query.get("limit") {
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=5_000).contains(l))
            .ok_or_else(|| bad_param("Invalid parameter: limit"))?,
        None => default,
    };
    Ok(knobs.max_page.map_or(limit, |m| limit.min(m)))
}

/// A page of `items` from `after`, with `paging.next` while more remain.
fn paged(
    shared: &Shared,
    path: &str,
    query: &BTreeMap<String, String>,
    items: Vec<Value>,
    size: usize,
) -> Response {
    let after = query
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let page: Vec<Value> = items.iter().skip(after).take(size).cloned().collect();
    let mut answer = json!({ "data": page });
    if after + size < items.len() {
        let mut q = query.clone();
        q.insert("after".into(), (after + size).to_string());
        let qs = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(q.iter())
            .finish();
        answer["paging"] = json!({"cursors": {"after": (after + size).to_string()}, "next": format!("{}/{VERSION}/{path}?{qs}", shared.base_url)});
    }
    Json(answer).into_response()
}

fn post_events(shared: &Shared, pixel: &str, body: &[u8], knobs: &Knobs) -> Response {
    let known = shared
        .accounts
        .iter()
        .flat_map(|a| a.pixels.iter())
        .any(|(p, _)| *p == pixel);
    if !known {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(33),
            "Unsupported post request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation",
            false,
        );
    }
    if knobs.deny_events {
        return meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) The access token may not send events to this dataset",
            false,
        );
    }
    match crate::capi::check_request(pixel, body, shared.clock.now_ms(), &knobs.reject_event_ids) {
        Ok(events) => {
            let received = events.len();
            shared
                .inner
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .accepted
                .extend(events);
            Json(json!({"events_received": received, "messages": [], "fbtrace_id": "AfakeTrace"}))
                .into_response()
        }
        Err(message) => meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(2_804_008),
            message,
            false,
        ),
    }
}

fn account<'a>(shared: &'a Shared, id: &str) -> Option<&'a SampleAccount> {
    shared.accounts.iter().find(|a| a.id == id)
}

fn graph_get(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
) -> Response {
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["me"] => Json(json!({"id": ME_ID, "name": ME_NAME})).into_response(),
        ["me", "adaccounts"] => {
            let size = match page_size(query, knobs, 25) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let items = shared
                .accounts
                .iter()
                .map(|a| json!({"id": a.id, "account_id": &a.id[4..], "name": a.name, "currency": a.currency, "timezone_name": a.timezone}))
                .collect();
            paged(shared, rest, query, items, size)
        }
        [_, "insights" | "ads"] if knobs.deny_permission => meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) Ad account owner has NOT grant ads_management or ads_read permission",
            false,
        ),
        [act, "insights"] => match account(shared, act) {
            Some(acc) => insights(shared, rest, acc, query, knobs),
            None => meta_error(
                StatusCode::BAD_REQUEST,
                100,
                Some(33),
                "Unsupported get request. Object does not exist or cannot be loaded due to missing permissions",
                false,
            ),
        },
        [act, "adspixels"] if knobs.deny_pixels.iter().any(|d| d == act) => meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) Missing permissions to read the ad account's pixels",
            false,
        ),
        [act, "adspixels"] => match account(shared, act) {
            Some(acc) if query.contains_key("fields") => {
                let size = match page_size(query, knobs, 25) {
                    Ok(s) => s,
                    Err(r) => return r,
                };
                let items = acc
                    .pixels
                    .iter()
                    .map(|(id, name)| json!({"id": id, "name": name}))
                    .collect();
                paged(shared, rest, query, items, size)
            }
            Some(_) => bad_param("Invalid parameter: fields"),
            None => meta_error(
                StatusCode::BAD_REQUEST,
                100,
                Some(33),
                "Unsupported get request. Object does not exist",
                false,
            ),
        },
        [id] if id.bytes().all(|b| b.is_ascii_digit()) => {
            match shared
                .accounts
                .iter()
                .flat_map(|a| a.pixels.iter())
                .find(|(p, _)| p == id)
            {
                Some((id, name)) => Json(json!({"id": id, "name": name})).into_response(),
                None => meta_error(
                    StatusCode::BAD_REQUEST,
                    100,
                    Some(33),
                    "Unsupported get request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation",
                    false,
                ),
            }
        }
        [act, "ads"] => match account(shared, act) {
            Some(acc) => ads(shared, rest, acc, query, knobs),
            None => meta_error(
                StatusCode::BAD_REQUEST,
                100,
                Some(33),
                "Unsupported get request. Object does not exist",
                false,
            ),
        },
        _ => meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(33),
            "Unsupported get request",
            false,
        ),
    }
}

fn insights(
    shared: &Shared,
    path: &str,
    acc: &SampleAccount,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
) -> Response {
    if query.get("level").map(String::as_str) != Some("ad") {
        return bad_param("Invalid parameter: level must be one of ad, adset, campaign, account");
    }
    if query.get("time_increment").map(String::as_str) != Some("1") {
        return bad_param("Invalid parameter: time_increment");
    }
    let Some(fields) = query.get("fields") else {
        return bad_param("Invalid parameter: fields");
    };
    if fields.split(',').any(|f| !INSIGHT_FIELDS.contains(&f)) {
        return bad_param("Invalid parameter: fields contains an unknown field");
    }
    let range = query
        .get("time_range")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| {
            let d = |k: &str| {
                v.get(k)?
                    .as_str()
                    .and_then(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
            };
            Some((d("since")?, d("until")?))
        });
    let Some((since, until)) = range.filter(|(s, u)| s <= u && (*u - *s).num_days() < 400) else {
        return bad_param(
            "Invalid parameter: time_range must be {\"since\":\"YYYY-MM-DD\",\"until\":\"YYYY-MM-DD\"}",
        );
    };
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mut rows = vec![];
    let mut date = since;
    while date <= until {
        for ad in acc
            .ads
            .iter()
            .filter(|a| !knobs.archived_ads.contains(&a.id))
        {
            if let Some((spend, impressions, clicks)) = ad_day(&ad.id, date) {
                rows.push(json!({
                    "ad_id": ad.id, "ad_name": ad.name, "adset_id": ad.adset_id, "adset_name": ad.adset_name,
                    "campaign_id": ad.campaign_id, "campaign_name": ad.campaign_name,
                    "spend": decimal(spend), "impressions": impressions.to_string(), "clicks": clicks.to_string(),
                    "date_start": date.to_string(), "date_stop": date.to_string(),
                }));
            }
        }
        date = date.succ_opt().expect("date");
    }
    if knobs.row_cap.is_some_and(|cap| rows.len() > cap) {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(1_487_534),
            "Please reduce the amount of data you're asking for, then retry your request",
            false,
        );
    }
    paged(shared, path, query, rows, size)
}

fn ads(
    shared: &Shared,
    path: &str,
    acc: &SampleAccount,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
) -> Response {
    if !query.contains_key("fields") {
        return bad_param("Invalid parameter: fields");
    }
    let only: Option<Vec<String>> = match query.get("filtering") {
        None => None,
        Some(f) => match serde_json::from_str::<Value>(f).ok().and_then(|v| {
            let rule = v.as_array()?.first()?.clone();
            (rule.get("field")?.as_str()? == "id" && rule.get("operator")?.as_str()? == "IN")
                .then_some(())?;
            Some(
                rule.get("value")?
                    .as_array()?
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect(),
            )
        }) {
            Some(ids) => Some(ids),
            None => return bad_param("Invalid parameter: filtering"),
        },
    };
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let items = acc
        .ads
        .iter()
        .filter(|ad| match &only {
            Some(ids) => ids.contains(&ad.id),
            // An archived ad comes back only when asked for by id.
            None => !knobs.archived_ads.contains(&ad.id),
        })
        .map(|ad| {
            let mut spec = json!({"page_id": "100000000000002"});
            if ad.carousel {
                spec["link_data"] = json!({"child_attachments": [{"name": "1"}, {"name": "2"}, {"name": "3"}]});
            } else if ad.object_type == "VIDEO" {
                spec["video_data"] = json!({"video_id": "1"});
            }
            json!({
                "id": ad.id, "name": ad.name, "effective_status": ad.status,
                "adset": {"id": ad.adset_id, "name": ad.adset_name},
                "campaign": {"id": ad.campaign_id, "name": ad.campaign_name},
                "creative": {"id": format!("9{}", ad.id), "object_type": ad.object_type,
                    "thumbnail_url": format!("{}/thumbs/{}.png", shared.base_url, ad.id), "object_story_spec": spec},
            })
        })
        .collect();
    paged(shared, path, query, items, size)
}

/// A valid 1×1 PNG.
const PNG_1X1: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];
