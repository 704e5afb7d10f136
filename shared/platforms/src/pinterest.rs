//! Pinterest's Conversions API v5: `POST
//! /v5/ad_accounts/{adAccountId}/events` with a bearer conversion token,
//! up to 1,000 events, `?test=true` for a dry run. Pinterest answers per
//! event (200, or 422 when not all were processed), so the events it
//! processed are never sent again.

use adtrail_domain::capi::Conversion;
use adtrail_domain::capi::platforms::Refusal;
use adtrail_domain::identifiers::Platform;
use serde_json::{Value, json};

use crate::wire::{self, Dialect};
use crate::{Answer, PlatformClient, refused};

/// The most events one request carries.
pub const MAX_EVENTS: usize = 1_000;

/// Pinterest's names: hashes in arrays, IP, user agent and the `_epik`
/// click id plain, the value as a decimal string.
const DIALECT: Dialect = Dialect {
    platform: Platform::Pinterest,
    plain: &[
        ("ip", "client_ip_address"),
        ("userAgent", "client_user_agent"),
        ("epik", "click_id"),
    ],
    value_as_text: true,
    web: "web",
    offline: "offline",
    fallback: "custom",
};

/// One row as Pinterest's wire format has it.
pub fn event(c: &Conversion) -> Value {
    wire::event(c, &DIALECT)
}

pub fn body(rows: &[&Conversion]) -> Value {
    json!({ "data": rows.iter().map(|c| event(c)).collect::<Vec<_>>() })
}

/// Pinterest's answer: per event, `None` when processed, else its reason.
///
/// # Errors
/// The refusal of the whole request and Pinterest's message.
pub fn read(answer: &Answer, sent: usize) -> Result<Vec<Option<String>>, (Refusal, String)> {
    match answer {
        Answer::Http {
            status: 200 | 422,
            body,
            ..
        } => {
            let events = body
                .get("events")
                .or_else(|| body.get("details").and_then(|d| d.get("events")))
                .and_then(Value::as_array);
            match events {
                Some(events) if events.len() == sent => Ok(events
                    .iter()
                    .map(|e| match e.get("status").and_then(Value::as_str) {
                        Some("processed") => None,
                        _ => Some(
                            e.get("error_message")
                                .and_then(Value::as_str)
                                .unwrap_or("failed")
                                .chars()
                                .take(500)
                                .collect(),
                        ),
                    })
                    .collect()),
                _ => Err((
                    Refusal::Transient,
                    "an answer without a status per event".to_owned(),
                )),
            }
        }
        other => Err(refused(other)),
    }
}

impl PlatformClient {
    /// Sends one request of Pinterest events to `ad_account`.
    pub async fn pinterest_send(
        &self,
        token: &str,
        ad_account: &str,
        test: bool,
        body: &Value,
    ) -> Answer {
        let mut url = Self::at(
            &self.urls.pinterest,
            &format!("/v5/ad_accounts/{ad_account}/events"),
        );
        if test {
            url.query_pairs_mut().append_pair("test", "true");
        }
        self.send(self.http().post(url).bearer_auth(token).json(body))
            .await
    }
}
