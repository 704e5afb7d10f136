//! TikTok's Events API 2.0: `POST /open_api/v1.3/event/track/` with the
//! `Access-Token` header, up to 1,000 events a request, all under one
//! pixel (`event_source: web`, `event_source_id`: the pixel code). TikTok
//! answers HTTP 200 with a `code` (0: taken) and fails a request whole for
//! one bad event.

use adtrail_domain::capi::Conversion;
use adtrail_domain::capi::platforms::{Refusal, tiktok_refusal};
use adtrail_domain::destinations::platform_event;
use adtrail_domain::identifiers::Platform;
use serde_json::{Map, Value, json};

use crate::wire::units;
use crate::{Answer, PlatformClient, message_of, refused};

/// The most events one request carries.
pub const MAX_EVENTS: usize = 1_000;
/// The API's path, version pinned.
pub const PATH: &str = "/open_api/v1.3/event/track/";

/// One row as TikTok's wire format has it.
pub fn event(c: &Conversion) -> Value {
    let hashes = c.hashes.clone().unwrap_or_default();
    let mut user = Map::new();
    if let Some(em) = hashes.em.first() {
        user.insert("email".into(), json!(em));
    }
    if let Some(ph) = hashes.ph.first() {
        user.insert("phone".into(), json!(ph));
    }
    if let Some(id) = &hashes.external_id {
        user.insert("external_id".into(), json!(id));
    }
    for (ours, theirs) in [
        ("ttclid", "ttclid"),
        ("ttp", "ttp"),
        ("ip", "ip"),
        ("userAgent", "user_agent"),
    ] {
        if let Some(v) = hashes.signals.get(ours) {
            user.insert(theirs.into(), json!(v));
        }
    }
    let mut properties = Map::new();
    if let (Some(cents), Some(currency)) = (c.value_cents, &c.currency) {
        properties.insert("currency".into(), json!(currency));
        properties.insert("value".into(), json!(units(cents, currency)));
    }
    if let Some(order) = &c.order_id {
        properties.insert("order_id".into(), json!(order));
    }
    let mut e = json!({
        "event": platform_event(Platform::TikTok, c.event_name).unwrap_or("CustomEvent"),
        "event_time": c.event_time.div_euclid(1_000),
        "event_id": c.event_id,
        "user": user,
        "properties": properties,
    });
    if let Some(url) = &c.source_url {
        e["page"] = json!({ "url": url });
    }
    e
}

/// The request's body.
pub fn body(pixel_code: &str, test_event_code: Option<&str>, rows: &[&Conversion]) -> Value {
    let mut body = json!({
        "event_source": "web",
        "event_source_id": pixel_code,
        "data": rows.iter().map(|c| event(c)).collect::<Vec<_>>(),
    });
    if let Some(code) = test_event_code {
        body["test_event_code"] = json!(code);
    }
    body
}

/// How TikTok answered: `Ok` when it took the events.
///
/// # Errors
/// The refusal and TikTok's message.
pub fn read(answer: &Answer) -> Result<(), (Refusal, String)> {
    match answer {
        Answer::Http {
            status: 200, body, ..
        } => match body.get("code").and_then(Value::as_i64) {
            Some(code) => match tiktok_refusal(code) {
                None => Ok(()),
                Some(r) => Err((r, message_of(body))),
            },
            None => Err((Refusal::Transient, "an answer without a code".to_owned())),
        },
        other => Err(refused(other)),
    }
}

impl PlatformClient {
    /// Sends one request of TikTok events.
    pub async fn tiktok_send(&self, token: &str, body: &Value) -> Answer {
        let url = Self::at(&self.urls.tiktok, PATH);
        self.send(
            self.http()
                .post(url)
                .header("Access-Token", token)
                .json(body),
        )
        .await
    }
}
