//! Google's Data Manager API (`POST /v1/events:ingest`), not the Ads API's
//! upload, which no longer takes new integrations. OAuth 2.0: an access
//! token minted from the destination's refresh token, or from a JWT its
//! service account signs (`POST /token` at Google's OAuth origin), and
//! cached until a minute before it expires.
//! Up to 2,000 events a request; each event names its conversion action
//! through a destination reference; e-mail and phone hashes only, hex
//! encoded; `validateOnly` in test mode. Google fails a request whole for
//! one invalid event (split, as for Meta).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use adtrail_domain::capi::platforms::{Refusal, http_refusal};
use adtrail_domain::capi::{Conversion, EventName};
use adtrail_domain::destinations::Credentials;
use adtrail_domain::events::ActionSource;
use serde_json::{Map, Value, json};

use crate::google_jwt;
use crate::wire::units;
use crate::{Answer, PlatformClient, message_of, refused};

/// The most events one request carries.
pub const MAX_EVENTS: usize = 2_000;
/// The API's path, version pinned.
pub const PATH: &str = "/v1/events:ingest";
/// User identifiers one event carries at most.
const MAX_IDENTIFIERS: usize = 10;
/// How long before its expiry a cached access token is minted anew.
const EXPIRY_MARGIN_MS: i64 = 60_000;

/// Access tokens by the credentials they were minted from (site, slug and
/// credential version): the token and when it expires.
pub type TokenCache = Arc<Mutex<BTreeMap<String, (String, i64)>>>;

/// The Google Ads account a destination sends for.
pub struct GoogleAccount<'a> {
    pub operating_account: &'a str,
    pub login_account: &'a str,
    pub conversion_actions: &'a BTreeMap<EventName, String>,
    pub validate_only: bool,
}

fn event_source(source: Option<&str>) -> &'static str {
    match source.and_then(ActionSource::parse) {
        Some(ActionSource::Website) => "WEB",
        Some(ActionSource::App) => "APP",
        Some(ActionSource::PhysicalStore) => "IN_STORE",
        Some(ActionSource::Phone) => "PHONE",
        _ => "OTHER",
    }
}

/// RFC 3339 in UTC, from epoch milliseconds.
fn timestamp(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// One row as the Data Manager's `Event`.
pub fn event(c: &Conversion) -> Value {
    let hashes = c.hashes.clone().unwrap_or_default();
    let identifiers: Vec<Value> = hashes
        .em
        .iter()
        .map(|h| json!({ "emailAddress": h }))
        .chain(hashes.ph.iter().map(|h| json!({ "phoneNumber": h })))
        .take(MAX_IDENTIFIERS)
        .collect();
    let mut e = json!({
        "destinationReferences": [c.event_name.wire()],
        "transactionId": c.event_id,
        "eventTimestamp": timestamp(c.event_time),
        "eventSource": event_source(c.action_source.as_deref()),
    });
    if !identifiers.is_empty() {
        e["userData"] = json!({ "userIdentifiers": identifiers });
    }
    let mut ad = Map::new();
    for key in ["gclid", "gbraid", "wbraid"] {
        if let Some(v) = hashes.signals.get(key) {
            ad.insert(key.into(), json!(v));
        }
    }
    if !ad.is_empty() {
        e["adIdentifiers"] = Value::Object(ad);
    }
    if let (Some(cents), Some(currency)) = (c.value_cents, &c.currency) {
        e["conversionValue"] = json!(units(cents, currency));
        e["currency"] = json!(currency);
    }
    e
}

/// The request's body: one destination per conversion action the rows
/// use, each event pointing at its own.
pub fn body(account: &GoogleAccount<'_>, rows: &[&Conversion]) -> Value {
    let google_ads = |id: &str| json!({ "accountType": "GOOGLE_ADS", "accountId": id });
    let mut used: Vec<EventName> = rows.iter().map(|c| c.event_name).collect();
    used.sort();
    used.dedup();
    let destinations: Vec<Value> = used
        .iter()
        .filter_map(|e| {
            let action = account.conversion_actions.get(e)?;
            Some(json!({
                "reference": e.wire(),
                "operatingAccount": google_ads(account.operating_account),
                "loginAccount": google_ads(account.login_account),
                "productDestinationId": action,
            }))
        })
        .collect();
    json!({
        "destinations": destinations,
        "events": rows.iter().map(|c| event(c)).collect::<Vec<_>>(),
        "encoding": "HEX",
        "validateOnly": account.validate_only,
    })
}

/// How the Data Manager answered: `Ok` when it accepted the request.
///
/// # Errors
/// The refusal and Google's message. A 401 is the access token's (it is
/// minted again), not the destination's: the refresh token's own refusal
/// comes from the token endpoint.
pub fn read(answer: &Answer) -> Result<(), (Refusal, String)> {
    match answer {
        Answer::Http { status: 200, .. } => Ok(()),
        Answer::Http {
            status: 401, body, ..
        } => Err((Refusal::Transient, message_of(body))),
        other => Err(refused(other)),
    }
}

/// What an access token is minted from.
pub enum Grant<'a> {
    /// An OAuth client and a refresh token.
    Refresh {
        client_id: &'a str,
        client_secret: &'a str,
        refresh_token: &'a str,
    },
    /// A service account: its e-mail and private key sign the request.
    ServiceAccount {
        client_email: &'a str,
        private_key: &'a str,
    },
}

impl<'a> Grant<'a> {
    /// The grant of a Google destination's credentials; `None` for any
    /// other platform's.
    pub fn of(credentials: &'a Credentials) -> Option<Self> {
        match credentials {
            Credentials::GoogleOAuth {
                client_id,
                client_secret,
                refresh_token,
            } => Some(Grant::Refresh {
                client_id,
                client_secret,
                refresh_token,
            }),
            Credentials::GoogleServiceAccount {
                client_email,
                private_key,
            } => Some(Grant::ServiceAccount {
                client_email,
                private_key,
            }),
            Credentials::Token(_) => None,
        }
    }
}

/// The token endpoint's form for a grant: the refresh token with its
/// client, or a service account's assertion signed for `token_url`.
fn token_form(
    grant: &Grant<'_>,
    token_url: &str,
    now_ms: i64,
) -> Result<Vec<(&'static str, String)>, (Refusal, String)> {
    Ok(match grant {
        Grant::Refresh {
            client_id,
            client_secret,
            refresh_token,
        } => vec![
            ("grant_type", "refresh_token".into()),
            ("client_id", (*client_id).into()),
            ("client_secret", (*client_secret).into()),
            ("refresh_token", (*refresh_token).into()),
        ],
        Grant::ServiceAccount {
            client_email,
            private_key,
        } => {
            let jwt = google_jwt::assertion(
                client_email,
                private_key,
                token_url,
                now_ms.div_euclid(1_000),
            )
            // A key that cannot sign is the destination's to mend.
            .map_err(|e| (Refusal::TokenInvalid, e.to_string()))?;
            vec![
                ("grant_type", google_jwt::JWT_BEARER.into()),
                ("assertion", jwt),
            ]
        }
    })
}

impl PlatformClient {
    /// An access token for `key`'s credentials: the cached one while it
    /// has more than a minute left, else a new one from the refresh token
    /// or the service account's signed assertion.
    ///
    /// # Errors
    /// A refused refresh token, client or service account
    /// (`invalid_grant`, `invalid_client`, a key that cannot sign: the
    /// destination stops), or the endpoint's failure.
    pub async fn google_access_token(
        &self,
        key: &str,
        grant: &Grant<'_>,
        now_ms: i64,
    ) -> Result<String, (Refusal, String)> {
        let cached = self
            .google_tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .filter(|(_, expires)| *expires - EXPIRY_MARGIN_MS > now_ms)
            .map(|(token, _)| token.clone());
        if let Some(token) = cached {
            return Ok(token);
        }
        let url = Self::at(&self.urls.google_oauth, "/token");
        let form = token_form(grant, url.as_str(), now_ms)?;
        match self.send(self.http().post(url).form(&form)).await {
            Answer::Http {
                status: 200, body, ..
            } => {
                let token = body.get("access_token").and_then(Value::as_str);
                let expires_in = body.get("expires_in").and_then(Value::as_i64).unwrap_or(0);
                let Some(token) = token else {
                    return Err((Refusal::Transient, "no access token in the answer".into()));
                };
                self.google_tokens
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(
                        key.to_owned(),
                        (token.to_owned(), now_ms + expires_in * 1_000),
                    );
                Ok(token.to_owned())
            }
            Answer::Http { status, body, .. } => {
                let error = body.get("error").and_then(Value::as_str).unwrap_or("");
                if matches!(
                    error,
                    "invalid_grant" | "invalid_client" | "unauthorized_client"
                ) {
                    Err((
                        Refusal::TokenInvalid,
                        format!("the token endpoint answered {error}"),
                    ))
                } else {
                    Err((
                        http_refusal(status, None),
                        format!("the token endpoint answered {status}"),
                    ))
                }
            }
            Answer::Lost { message, .. } => Err((Refusal::Transient, message)),
        }
    }

    /// Forgets `key`'s access token (Google refused it).
    pub fn forget_google_token(&self, key: &str) {
        self.google_tokens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }

    /// Sends one request of Data Manager events.
    pub async fn google_send(&self, access_token: &str, body: &Value) -> Answer {
        let url = Self::at(&self.urls.google_datamanager, PATH);
        self.send(self.http().post(url).bearer_auth(access_token).json(body))
            .await
    }
}
