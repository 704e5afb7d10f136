//! The HTTP calls: one `reqwest` client with a timeout, bodies read with a
//! byte cap, paging followed on the Graph origin only.

use std::time::Duration;

use adtrail_domain::dates::parse_date;
use adtrail_domain::graph_error::{GraphErrorKind, USAGE_HEADERS, Usage, parse_usage_header};
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::money::Currency;
use adtrail_domain::plan::DateRange;
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use crate::GRAPH_VERSION;
use crate::error::GraphError;
use crate::types::*;

/// Rows asked per insights page.
pub const INSIGHTS_PAGE_SIZE: u32 = 500;
/// Pages read per insights range before it counts as incomplete.
pub const MAX_INSIGHTS_PAGES: usize = 40;
const ADS_PAGE_SIZE: u32 = 200;
const MAX_ADS_PAGES: usize = 25;
const ACCOUNTS_PAGE_SIZE: u32 = 200;
const MAX_ACCOUNTS: usize = 1_000;
const MAX_PIXEL_PAGES: usize = 5;
const MAX_BODY: usize = 8 * 1024 * 1024;
const MAX_THUMBNAIL: usize = 1024 * 1024;
/// A thumbnail's fetch, start to last byte.
const CDN_TIMEOUT: Duration = Duration::from_secs(10);
const MAX_NAME: usize = 400;

/// The Graph API client.
#[derive(Debug, Clone)]
pub struct GraphClient {
    config: GraphConfig,
    /// When the calls must be over (an API request's); `None`: each call
    /// waits its configured timeout.
    deadline: Option<adtrail_http::Deadline>,
}

#[derive(Deserialize)]
struct Paged {
    #[serde(default)]
    data: Vec<Value>,
    paging: Option<Paging>,
}

#[derive(Deserialize)]
struct Paging {
    next: Option<String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.chars()
                .filter(|c| !c.is_control())
                .take(MAX_NAME)
                .collect()
        })
}

fn meta_id(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| check_meta_numeric(key, s).is_ok())
        .map(str::to_owned)
}

fn count(v: &Value, key: &str) -> Result<i64, GraphError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s))
            if s.len() <= 18 && !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) =>
        {
            s.parse().map_err(|_| GraphError::malformed(key))
        }
        Some(Value::Number(n)) => n
            .as_i64()
            .filter(|n| *n >= 0)
            .ok_or_else(|| GraphError::malformed(key)),
        _ => Err(GraphError::malformed(key)),
    }
}

mod accounts;
mod config;
pub use config::{GraphConfig, timeout_from_env};
mod capi;
mod insights;
mod leads;
mod pages;
mod thumbnails;

#[cfg(test)]
use insights::parse_ad;

impl GraphClient {
    /// The Graph API as `config` says. No I/O and no HTTP client yet:
    /// [`http`](Self::http) builds the process's at the first call, so the
    /// API's requests that call no platform never build one.
    pub fn new(config: GraphConfig) -> Self {
        Self {
            config,
            deadline: None,
        }
    }

    /// This client with its calls bound to `deadline`: each waits the
    /// shorter of its timeout and the time left, and none starts with
    /// almost nothing left ([`GraphError::out_of_time`]). Cheap: the HTTP
    /// client is the process's.
    pub fn within(&self, deadline: Option<adtrail_http::Deadline>) -> Self {
        Self {
            config: self.config.clone(),
            deadline,
        }
    }

    /// The process's client for the platforms (`adtrail_http::platforms`,
    /// no redirects); each call sets its timeout.
    pub(crate) fn http(&self) -> &'static reqwest::Client {
        adtrail_http::platforms()
    }

    /// Whether the deadline leaves no time for another call: a caller
    /// stops taking work it would need Meta for.
    pub fn out_of_time(&self) -> bool {
        adtrail_http::call_timeout(self.config.timeout, self.deadline).is_none()
    }

    pub fn config(&self) -> &GraphConfig {
        &self.config
    }

    pub(crate) fn url(&self, path: &str, query: &[(&str, &str)]) -> Url {
        let mut url = self.config.base_url.clone();
        url.set_path(&format!("/{GRAPH_VERSION}/{path}"));
        url.query_pairs_mut().extend_pairs(query);
        url
    }

    /// A `paging.next` URL, if it stays on the Graph origin. Meta puts the
    /// token that asked in every `next` link: it is taken out, and goes in
    /// the header as always, so no URL we request or log carries a token.
    fn next_url(&self, next: &str) -> Result<Url, GraphError> {
        let mut url = Url::parse(next).map_err(|_| GraphError::malformed("paging link"))?;
        let base = &self.config.base_url;
        if url.scheme() != base.scheme()
            || url.host_str() != base.host_str()
            || url.port_or_known_default() != base.port_or_known_default()
        {
            return Err(GraphError::malformed("paging link"));
        }
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| k != "access_token")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if kept.is_empty() {
            url.set_query(None);
        } else {
            url.query_pairs_mut().clear().extend_pairs(kept);
        }
        Ok(url)
    }

    /// One GET with the token in the header: the JSON body and the usage.
    async fn get(&self, url: Url, token: &str) -> Result<(Value, Usage), GraphError> {
        self.call(self.http().get(url), token).await
    }

    /// One request with the token in the header, its answer read bounded
    /// and its error classified.
    pub(crate) async fn call(
        &self,
        request: reqwest::RequestBuilder,
        token: &str,
    ) -> Result<(Value, Usage), GraphError> {
        let started = std::time::Instant::now();
        let answer = self.call_unmeasured(request, token).await;
        record(started.elapsed(), &answer);
        answer
    }

    async fn call_unmeasured(
        &self,
        request: reqwest::RequestBuilder,
        token: &str,
    ) -> Result<(Value, Usage), GraphError> {
        // The code trade authenticates with the app's id and secret in the
        // form body, and sends no token at all.
        let request = if token.is_empty() {
            request
        } else {
            request.bearer_auth(token)
        };
        let Some(timeout) = adtrail_http::call_timeout(self.config.timeout, self.deadline) else {
            return Err(GraphError::out_of_time());
        };
        let resp = request
            .timeout(timeout)
            .send()
            .await
            .map_err(GraphError::transport)?;
        let status = resp.status().as_u16();
        let mut usage = Usage::default();
        for name in USAGE_HEADERS {
            if let Some(v) = resp.headers().get(name).and_then(|v| v.to_str().ok()) {
                usage = usage.merge(parse_usage_header(v));
            }
        }
        let body = read_bounded(resp, MAX_BODY).await?;
        let json: Value =
            serde_json::from_slice(&body).map_err(|_| GraphError::malformed("answer"))?;
        if let Some(err) = json.get("error") {
            let mut e = GraphError::from_answer(
                status,
                err.get("code").and_then(Value::as_i64),
                err.get("error_subcode").and_then(Value::as_i64),
                err.get("is_transient")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                err.get("message").and_then(Value::as_str).unwrap_or(""),
                token,
            );
            e.regain_ms = usage.regain_ms;
            return Err(e);
        }
        if status >= 400 {
            let mut e = GraphError::from_answer(status, None, None, false, "", token);
            e.regain_ms = usage.regain_ms;
            return Err(e);
        }
        Ok((json, usage))
    }
}

/// The request's metrics: its latency, its error's class, the usage Meta
/// reported (on an answer that carried any).
fn record(elapsed: Duration, answer: &Result<(Value, Usage), GraphError>) {
    use adtrail_domain::telemetry::{
        META_ERRORS, META_LATENCY, META_REQUESTS, META_USAGE, histogram_slot,
    };
    metrics::counter!(META_REQUESTS).increment(1);
    if histogram_slot(META_LATENCY) {
        metrics::histogram!(META_LATENCY).record(elapsed.as_secs_f64() * 1_000.0);
    }
    match answer {
        Ok((_, usage)) if usage.pct > 0 => {
            if histogram_slot(META_USAGE) {
                metrics::histogram!(META_USAGE).record(f64::from(usage.pct));
            }
        }
        Ok(_) => {}
        Err(e) => metrics::counter!(META_ERRORS, "Class" => e.kind.as_str()).increment(1),
    }
}

/// Reads a body up to `max` bytes; more is an error, not a truncation.
async fn read_bounded(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>, GraphError> {
    if resp.content_length().is_some_and(|n| n as usize > max) {
        return Err(GraphError::malformed("oversized answer"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(GraphError::transport)? {
        if body.len() + chunk.len() > max {
            return Err(GraphError::malformed("oversized answer"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Whether Meta asks for less: the range read in halves, a page's
/// `limit` shrunk. Besides its documented subcodes, Meta answers code 1
/// "Please reduce the amount of data you're asking for" on big listings.
pub fn too_much_data(e: &GraphError) -> bool {
    e.kind == GraphErrorKind::TooMuchData
        || (e.code == Some(1)
            && e.message
                .to_ascii_lowercase()
                .contains("reduce the amount of data"))
}

/// The smallest `limit` a page shrinks to before the listing fails.
const MIN_PAGE_LIMIT: u32 = 5;

/// `url` asking for `limit` items a page.
fn with_limit(url: &Url, limit: u32) -> Url {
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "limit")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut out = url.clone();
    out.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .append_pair("limit", &limit.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> GraphClient {
        let mut c = GraphConfig::meta();
        c.thumbnail_hosts.push("127.0.0.1".into());
        c.insecure_thumbnail_hosts.push("127.0.0.1".into());
        GraphClient::new(c)
    }

    /// The shared client has no timeout of its own: each call carries the
    /// configured one.
    #[tokio::test]
    async fn a_call_meta_never_answers_ends_at_the_configured_timeout() {
        let mut config = client().config;
        config.base_url = format!("http://{}", adtrail_http::silent_server())
            .parse()
            .unwrap();
        config.timeout = Duration::from_millis(300);
        let client = GraphClient::new(config);
        let err = tokio::time::timeout(Duration::from_secs(5), client.me("t"))
            .await
            .expect("ended by the call's own timeout")
            .unwrap_err();
        assert_eq!(err.message, "Meta did not answer in time");
        assert!(err.maybe_received);
    }

    #[test]
    fn thumbnails_come_from_meta_cdn_over_https_only() {
        let c = client();
        assert!(
            c.thumbnail_allowed("https://scontent.xx.fbcdn.net/v/t45/abc.jpg")
                .is_some()
        );
        assert!(
            c.thumbnail_allowed("http://127.0.0.1:9/thumb.png")
                .is_some()
        );
        for bad in [
            "http://scontent.xx.fbcdn.net/a.jpg",
            "https://evil.example/a.jpg",
            "https://fbcdn.net.evil.example/a.jpg",
            "https://user:pw@scontent.fbcdn.net/a.jpg",
            "file:///etc/passwd",
            "https://169.254.169.254/latest/meta-data",
        ] {
            assert!(c.thumbnail_allowed(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn paging_links_must_stay_on_the_graph_origin() {
        let c = client();
        assert!(
            c.next_url("https://graph.facebook.com/v25.0/act_1/insights?after=x")
                .is_ok()
        );
        assert!(
            c.next_url("https://evil.example/v25.0/act_1/insights?after=x")
                .is_err()
        );
        let next = c
            .next_url("https://graph.facebook.com/v25.0/x?limit=5&access_token=EAAB-leak&after=c2")
            .expect("a link with the token is read without it");
        assert_eq!(next.query(), Some("limit=5&after=c2"));
        let bare = c
            .next_url("https://graph.facebook.com/v25.0/x?access_token=EAAB-leak")
            .unwrap();
        assert_eq!(bare.query(), None);
    }

    #[test]
    fn creatives_map_to_four_types() {
        let ad = |creative: Value| {
            parse_ad(&serde_json::json!({"id": "1", "creative": creative}))
                .unwrap()
                .creative_type
        };
        assert_eq!(
            ad(serde_json::json!({"object_type": "VIDEO"})).as_deref(),
            Some("video")
        );
        assert_eq!(
            ad(serde_json::json!({"object_type": "PHOTO"})).as_deref(),
            Some("image")
        );
        assert_eq!(
            ad(serde_json::json!({"object_type": "SHARE", "object_story_spec": {"link_data": {"child_attachments": [{}, {}]}}})).as_deref(),
            Some("carousel")
        );
        assert_eq!(
            ad(serde_json::json!({"object_type": "STATUS"})).as_deref(),
            Some("other")
        );
    }
}
