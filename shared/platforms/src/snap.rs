//! Snap's Conversions API v3: `POST /v3/{pixelId}/events` (or
//! `/events/validate` in test mode: checked, not processed), the token in
//! the query as Snap requires (this crate never logs a URL), up to 1,000
//! events. A request Snap calls invalid is split like Meta's.

use adtrail_domain::capi::Conversion;
use adtrail_domain::capi::platforms::Refusal;
use adtrail_domain::identifiers::Platform;
use serde_json::{Value, json};

use crate::wire::{self, Dialect};
use crate::{Answer, PlatformClient, refused};

/// The most events one request carries.
pub const MAX_EVENTS: usize = 1_000;

/// Snap's names: hashes in arrays, IP, user agent and the `ScCid` click
/// id plain.
const DIALECT: Dialect = Dialect {
    platform: Platform::Snap,
    plain: &[
        ("ip", "client_ip_address"),
        ("userAgent", "client_user_agent"),
        ("scClickId", "sc_click_id"),
    ],
    value_as_text: false,
    web: "WEB",
    offline: "OFFLINE",
    fallback: "CUSTOM_EVENT_1",
};

/// One row as Snap's wire format has it.
pub fn event(c: &Conversion) -> Value {
    wire::event(c, &DIALECT)
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
