//! Meta's Lead Ads webhooks, the two routes outside the JWT authorizer:
//! `GET /v1/webhooks/meta` answers Meta's verification of the callback URL
//! (`hub.mode=subscribe`, the verify token compared in constant time,
//! `hub.challenge` echoed as text), and `POST /v1/webhooks/meta` takes a
//! delivery only when `X-Hub-Signature-256` is the app secret's HMAC-SHA256
//! of the body's exact bytes (checked before anything of it is read). Each
//! `leadgen` change becomes one message on the leadgen queue, ids only,
//! and Meta gets its 200 at once, also for Pages no site links (they are
//! sorted out from the queue). A delivery the queue refuses answers 503:
//! Meta delivers it again, for 36 hours.

use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::leadads::leadgen_changes;
use adtrail_store::meta_app::{MetaApp, MetaAppError};
use adtrail_store::queue::LeadgenMessage;
use aws_lc_rs::hmac;
use lambda_http::{Body, Request, Response};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::input::{body_bytes, query};
use crate::views::WebhookView;
use crate::{Api, json};

/// The largest delivery read: Meta batches changes, never near this.
const MAX_DELIVERY: usize = 1024 * 1024;
/// The longest challenge echoed.
const MAX_CHALLENGE: usize = 256;

pub(crate) fn lead_ads_on(api: &Api) -> Result<(), ApiError> {
    if api.lead_ads {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::LeadAdsOff,
            "Lead Ads is off for this stack (its LeadAds parameter)",
        ))
    }
}

/// The Meta app, whose secret signs deliveries and whose verify token
/// Meta echoes. Without one, nothing can be checked: Lead Ads cannot run.
async fn meta_app(api: &Api) -> Result<MetaApp, ApiError> {
    api.store
        .app_secrets()
        .meta_app()
        .await
        .map_err(|e| match e {
            MetaAppError::Store(e) => e.into(),
            other => {
                tracing::warn!(error = %other, "the webhook has no Meta app to check with");
                ApiError::new(
                    ErrorCode::LeadAdsOff,
                    "no Meta app is configured to check Meta's calls",
                )
            }
        })
}

fn forbidden() -> ApiError {
    ApiError::forbidden("hub.verify_token: does not match; nothing was subscribed")
}

/// `GET /v1/webhooks/meta?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`.
pub(crate) async fn verify(api: &Api, req: &Request) -> Result<Response<Body>, ApiError> {
    lead_ads_on(api)?;
    let params = query(req, &["hub.mode", "hub.verify_token", "hub.challenge"])?;
    let field = |k: &str| params.get(k).map(String::as_str).unwrap_or("");
    let challenge = field("hub.challenge");
    if challenge.is_empty()
        || challenge.len() > MAX_CHALLENGE
        || !challenge.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(ApiError::invalid(format!(
            "hub.challenge: 1 to {MAX_CHALLENGE} printable characters"
        )));
    }
    if field("hub.mode") != "subscribe" {
        return Err(forbidden());
    }
    let app = meta_app(api).await?;
    let Some(expected) = app.webhook_verify_token.as_deref() else {
        return Err(forbidden());
    };
    // The digests are compared, not the tokens: how long the comparison
    // takes tells nothing of the token's own bytes.
    if Sha256::digest(field("hub.verify_token")) != Sha256::digest(expected) {
        return Err(forbidden());
    }
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(Body::from(challenge.to_owned()))
        .expect("static response parts"))
}

fn unsigned(why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Unauthenticated,
        format!("X-Hub-Signature-256: {why}; nothing was taken"),
    )
}

/// The signature header's digest: `sha256=` and 64 hex digits.
fn signature(req: &Request) -> Result<Vec<u8>, ApiError> {
    let header = req
        .headers()
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| unsigned("missing"))?;
    let hex = header
        .strip_prefix("sha256=")
        .filter(|h| h.len() == 64)
        .ok_or_else(|| unsigned("not sha256=<64 hex digits>"))?;
    (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| unsigned("not sha256=<64 hex digits>"))
}

/// `POST /v1/webhooks/meta`: a signed delivery of `leadgen` changes.
pub(crate) async fn receive(api: &Api, req: &Request) -> Result<Response<Body>, ApiError> {
    lead_ads_on(api)?;
    // The exact bytes Meta signed.
    let bytes = body_bytes(req);
    if bytes.len() > MAX_DELIVERY {
        return Err(ApiError::invalid(format!(
            "body is larger than {MAX_DELIVERY} bytes"
        )));
    }
    let tag = signature(req)?;
    let app = meta_app(api).await?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, app.app_secret.as_bytes());
    hmac::verify(&key, bytes, &tag).map_err(|_| unsigned("does not match the body"))?;
    let body: Value =
        serde_json::from_slice(bytes).map_err(|_| ApiError::invalid("body: is not valid JSON"))?;
    let messages: Vec<LeadgenMessage> = leadgen_changes(&body)
        .unwrap_or_default()
        .into_iter()
        .map(|c| LeadgenMessage {
            page_id: c.page_id,
            leadgen_id: c.leadgen_id,
            form_id: c.form_id,
            ad_id: c.ad_id,
            adgroup_id: c.adgroup_id,
            created_time: c.created_time,
            via: "webhook".into(),
        })
        .collect();
    if !messages.is_empty() {
        let refused = api.store.queues().enqueue_leadgen(&messages).await?;
        if refused > 0 {
            tracing::warn!(refused, "SQS refused form leads; Meta delivers them again");
            return Err(ApiError::new(
                ErrorCode::StoreUnavailable,
                "the leadgen queue refused the delivery; Meta delivers it again",
            ));
        }
    }
    tracing::info!(
        leads = messages.len(),
        "Meta's webhook delivered form leads"
    );
    json(
        200,
        &WebhookView {
            received: messages.len(),
        },
    )
}
