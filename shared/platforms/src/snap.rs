//! Snap's Conversions API v3: `POST /v3/{pixelId}/events` (or
//! `/events/validate` in test mode: checked, not processed), the token in
//! the query as Snap requires (this crate never logs a URL), up to 1,000
//! events. A request Snap calls invalid is split like Meta's.

use adtrail_domain::capi::Conversion;
use adtrail_domain::capi::platforms::Refusal;
use adtrail_domain::destinations::platform_event;
use adtrail_domain::events::ActionSource;
use adtrail_domain::identifiers::Platform;
use serde_json::{Value, json};

use crate::wire::{custom_data, user_data};
use crate::{Answer, PlatformClient, refused};

/// The most events one request carries.
pub const MAX_EVENTS: usize = 1_000;

/// One row as Snap's wire format has it.
pub fn event(c: &Conversion) -> Value {
    let hashes = c.hashes.clone().unwrap_or_default();
    let user = user_data(
        &hashes,
        &[
            ("ip", "client_ip_address"),
            ("userAgent", "client_user_agent"),
            ("scClickId", "sc_click_id"),
        ],
    );
    let custom = custom_data(c, false);
    let web =
        c.action_source.as_deref().and_then(ActionSource::parse) == Some(ActionSource::Website);
    let mut e = json!({
        "event_name": platform_event(Platform::Snap, c.event_name).unwrap_or("CUSTOM_EVENT_1"),
        "action_source": if web { "WEB" } else { "OFFLINE" },
        "event_time": c.event_time.div_euclid(1_000),
        "event_id": c.event_id,
        "user_data": user,
        "custom_data": custom,
    });
    if let Some(url) = &c.source_url {
        e["event_source_url"] = json!(url);
    }
    e
}

pub fn body(rows: &[&Conversion]) -> Value {
    json!({ "data": rows.iter().map(|c| event(c)).collect::<Vec<_>>() })
}

/// How Snap answered: `Ok` when it took the events.
///
/// # Errors
/// The refusal and Snap's message.
pub fn read(answer: &Answer) -> Result<(), (Refusal, String)> {
    match answer {
        Answer::Http { status: 200, .. } => Ok(()),
        other => Err(refused(other)),
    }
}

impl PlatformClient {
    /// Sends one request of Snap events to `pixel` (to its validate
    /// endpoint in test mode).
    pub async fn snap_send(
        &self,
        token: &str,
        pixel: &str,
        validate: bool,
        body: &Value,
    ) -> Answer {
        let path = if validate {
            format!("/v3/{pixel}/events/validate")
        } else {
            format!("/v3/{pixel}/events")
        };
        let mut url = Self::at(&self.urls.snap, &path);
        url.query_pairs_mut().append_pair("access_token", token);
        self.send(self.http().post(url).json(body)).await
    }
}
