//! The conversion APIs of the ad platforms besides Meta (whose Graph client
//! is `adtrail-meta`): each platform's endpoint and version (fixed here,
//! https, overridable only by its base-URL setting), its authentication,
//! its wire format built from a conversion row, and its answer read back
//! into the domain's words. What an answer makes of an attempt is the
//! domain's (`adtrail_domain::capi::platforms`).
//!
//! A credential never reaches a log or an error: errors carry the
//! transport's words without the request's URL (Snap's token travels in
//! its query, as Snap requires).

use std::time::Duration;

use serde_json::Value;
use url::Url;

pub mod google;
pub mod google_jwt;
pub mod pinterest;
pub mod snap;
pub mod tiktok;
mod wire;

/// Each platform's origin.
#[derive(Debug, Clone)]
pub struct PlatformUrls {
    pub tiktok: Url,
    pub pinterest: Url,
    pub snap: Url,
    pub google_datamanager: Url,
    pub google_oauth: Url,
}

impl PlatformUrls {
    /// The platforms' own origins.
    pub fn production() -> Self {
        let url = |u: &str| Url::parse(u).expect("static URL");
        PlatformUrls {
            tiktok: url("https://business-api.tiktok.com"),
            pinterest: url("https://api.pinterest.com"),
            snap: url("https://tr.snapchat.com"),
            google_datamanager: url("https://datamanager.googleapis.com"),
            google_oauth: url("https://oauth2.googleapis.com"),
        }
    }

    /// The origins, each overridden by its variable when set:
    /// `TIKTOK_API_URL`, `PINTEREST_API_URL`, `SNAP_API_URL`,
    /// `GOOGLE_DATAMANAGER_URL`, `GOOGLE_OAUTH_URL`.
    ///
    /// # Errors
    /// A message naming the variable that is not https (plain http only on
    /// a loopback address, the local fakes).
    pub fn from_env() -> Result<Self, String> {
        let mut urls = Self::production();
        for (name, slot) in [
            ("TIKTOK_API_URL", &mut urls.tiktok),
            ("PINTEREST_API_URL", &mut urls.pinterest),
            ("SNAP_API_URL", &mut urls.snap),
            ("GOOGLE_DATAMANAGER_URL", &mut urls.google_datamanager),
            ("GOOGLE_OAUTH_URL", &mut urls.google_oauth),
        ] {
            if let Ok(text) = std::env::var(name) {
                *slot = origin(name, &text)?;
            }
        }
        Ok(urls)
    }

    /// Every origin under one base (the local fakes: `<base>/tiktok`, …).
    pub fn under(base: &str) -> Result<Self, String> {
        Ok(PlatformUrls {
            tiktok: origin("base", &format!("{base}/tiktok"))?,
            pinterest: origin("base", &format!("{base}/pinterest"))?,
            snap: origin("base", &format!("{base}/snap"))?,
            google_datamanager: origin("base", &format!("{base}/google"))?,
            google_oauth: origin("base", &format!("{base}/oauth"))?,
        })
    }
}

/// An origin: https, or plain http only on a loopback address. A
/// credential never travels in the clear off the machine.
///
/// # Errors
/// A message naming `name`.
pub fn origin(name: &str, text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|_| format!("{name} is not a URL"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        _ => Err(format!(
            "{name} must be https (plain http only on a loopback address)"
        )),
    }
}

/// How long a platform has to answer one request.
pub const PLATFORM_TIMEOUT: Duration = Duration::from_secs(30);

/// How a request went on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The platform answered: its status and JSON body (`Null` when the
    /// body is not JSON), and `Retry-After` in milliseconds.
    Http {
        status: u16,
        body: Value,
        retry_after_ms: Option<i64>,
    },
    /// No answer. `maybe_received`: the request may have reached the
    /// platform (a timeout after it was sent), so its events may be there.
    Lost {
        maybe_received: bool,
        message: String,
    },
}

/// The calls to every platform but Meta: one connection pool, one timeout.
#[derive(Debug, Clone)]
pub struct PlatformClient {
    pub urls: PlatformUrls,
    pub timeout: Duration,
    /// Google's access tokens, kept until they expire.
    google_tokens: google::TokenCache,
    /// When the calls must be over (an API request's); `None`: each waits
    /// `timeout`.
    deadline: Option<adtrail_http::Deadline>,
}

/// The most of a platform's answer read: its answers are small JSON.
const MAX_ANSWER_BYTES: usize = 1 << 20;

impl PlatformClient {
    /// The platforms at `urls`, each request bounded by `timeout`. No I/O
    /// and no HTTP client yet: [`http`](Self::http) builds the process's
    /// at the first send.
    pub fn new(urls: PlatformUrls, timeout: Duration) -> Self {
        Self {
            urls,
            timeout,
            google_tokens: google::TokenCache::default(),
            deadline: None,
        }
    }

    /// This client with its sends bound to `deadline`: each waits the
    /// shorter of `timeout` and the time left, and none starts with almost
    /// nothing left. The token cache stays shared.
    pub fn within(&self, deadline: Option<adtrail_http::Deadline>) -> Self {
        Self {
            deadline,
            ..self.clone()
        }
    }

    /// `url` under `origin`, with its path set.
    pub fn at(origin: &Url, path: &str) -> Url {
        let mut url = origin.clone();
        let base = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{base}{path}"));
        url
    }

    /// Sends a request and reads the answer, bounded. The transport's
    /// error is kept without the URL.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let Some(timeout) = adtrail_http::call_timeout(self.timeout, self.deadline) else {
            // Not sent: the platform saw nothing.
            return Answer::Lost {
                maybe_received: false,
                message: "no time was left to call the platform before the request's deadline"
                    .into(),
            };
        };
        let response = match request.timeout(timeout).send().await {
            Ok(r) => r,
            Err(e) => {
                // Connected and sent, then silence: it may have arrived.
                let maybe_received = e.is_timeout() && !e.is_connect();
                return Answer::Lost {
                    maybe_received,
                    message: e.without_url().to_string(),
                };
            }
        };
        let status = response.status().as_u16();
        let retry_after_ms = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map(|s| s.saturating_mul(1_000));
        match response.bytes().await {
            Ok(bytes) if bytes.len() <= MAX_ANSWER_BYTES => Answer::Http {
                status,
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                retry_after_ms,
            },
            Ok(_) => Answer::Http {
                status,
                body: Value::Null,
                retry_after_ms,
            },
            Err(e) => Answer::Lost {
                maybe_received: true,
                message: e.without_url().to_string(),
            },
        }
    }

    /// The process's client for the platforms (`adtrail_http::platforms`):
    /// built at the first send, so a function that sends nothing never
    /// builds it. [`send`](Self::send) sets each request's timeout.
    pub fn http(&self) -> &'static reqwest::Client {
        adtrail_http::platforms()
    }
}

/// A platform's message in its answer (`message`, or `error.message`), if
/// any: untrusted text the domain scrubs before keeping.
pub fn message_of(body: &Value) -> String {
    body.get("message")
        .or_else(|| body.get("error").and_then(|e| e.get("message")))
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .chars()
        .take(500)
        .collect()
}

/// A failed request as most platforms say it: the HTTP status (and its
/// `Retry-After`) as the domain sorts it, or no answer at all.
pub(crate) fn refused(answer: &Answer) -> (adtrail_domain::capi::platforms::Refusal, String) {
    use adtrail_domain::capi::platforms::{Refusal, http_refusal};
    match answer {
        Answer::Http {
            status,
            body,
            retry_after_ms,
        } => (http_refusal(*status, *retry_after_ms), message_of(body)),
        Answer::Lost { message, .. } => (Refusal::Transient, message.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared client has no timeout of its own: `send` gives each
    /// request the platforms' one.
    #[tokio::test]
    async fn a_send_no_platform_answers_ends_at_the_timeout_maybe_received() {
        let base = format!("http://{}", adtrail_http::silent_server());
        let client = PlatformClient::new(
            PlatformUrls::under(&base).unwrap(),
            Duration::from_millis(300),
        );
        let url = PlatformClient::at(&client.urls.snap, "/v3/conversion");
        let send = client.send(client.http().post(url).body("{}"));
        let answer = tokio::time::timeout(Duration::from_secs(5), send)
            .await
            .expect("ended by the request's own timeout");
        assert!(
            matches!(
                answer,
                Answer::Lost {
                    maybe_received: true,
                    ..
                }
            ),
            "{answer:?}"
        );
    }
}
