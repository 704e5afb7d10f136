//! Lead Ads' form leads on the sample Pages' forms. A test, the demo or a
//! developer submits one ([`FakeMeta::submit_lead`], or `POST
//! /_fake/leads`); the fake keeps it and delivers Meta's webhook for it to
//! the stack, signed with the app secret over its exact bytes, once, twice,
//! never, or later (when asked to deliver what it held back). `GET
//! /{leadgen_id}` answers only the Page's own token, with only the fields
//! asked (`field_data` among them when asked); any other token gets Meta's
//! `(#100)` subcode 33, as a token that cannot see the lead does.

use std::collections::BTreeMap;

use aws_lc_rs::hmac;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agency::page_token;
use crate::forms::SAMPLE_FORMS;
use crate::login::FAKE_APP_SECRET;
use crate::server::{FakeMeta, Shared};
use crate::wire::meta_error;

/// How the fake delivers a submitted lead's webhook.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    #[default]
    Once,
    /// Twice at once, as Meta retries a delivery it thinks failed.
    Twice,
    /// Never: only the reconciliation finds it.
    Never,
    /// Held back until [`FakeMeta::deliver_late`].
    Late,
}

/// A lead to submit on a form.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Submission {
    pub page_id: String,
    pub form_id: String,
    /// The sample ad that brought it; none for an organic lead.
    #[serde(default)]
    pub ad_id: Option<String>,
    /// Question key → values, as `field_data` gives them.
    #[serde(default)]
    pub answers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub delivery: Delivery,
}

/// What a submission made.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Submitted {
    pub leadgen_id: String,
    /// Webhook deliveries the stack answered 200.
    pub delivered: usize,
}

/// A form lead the fake keeps.
#[derive(Debug, Clone)]
pub(crate) struct StoredLead {
    pub(crate) page: String,
    pub(crate) form: String,
    pub(crate) ad: Option<crate::agency::SampleAd>,
    /// Epoch seconds.
    pub(crate) created: i64,
    pub(crate) answers: BTreeMap<String, Vec<String>>,
}

/// Meta's `created_time`: an offset without a colon.
pub(crate) fn meta_time(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S+0000")
        .to_string()
}

/// `sha256=<hex>` of `body` under the app secret, as Meta signs.
pub fn signature(body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, FAKE_APP_SECRET.as_bytes());
    format!("sha256={}", hex::encode(hmac::sign(&key, body).as_ref()))
}

/// `GET /{leadgen_id}`, or `None` when `rest` is not a lead the fake made.
pub(crate) fn read_lead(
    shared: &Shared,
    rest: &str,
    fields: Option<&str>,
    token: &str,
) -> Option<Response> {
    let inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
    let lead = inner.form_leads.get(rest)?;
    if token != page_token(&lead.page) {
        return Some(meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(33),
            &format!(
                "Unsupported get request. Object with ID '{rest}' does not exist, cannot be \
                 loaded due to missing permissions, or does not support this operation"
            ),
            false,
        ));
    }
    let asked: Vec<&str> = fields
        .unwrap_or("id,created_time,ad_id,form_id,field_data")
        .split(',')
        .collect();
    let ad = lead.ad.as_ref();
    let all = json!({
        "id": rest,
        "created_time": meta_time(lead.created),
        "ad_id": ad.map(|a| a.id.clone()),
        "ad_name": ad.map(|a| a.name.clone()),
        "adset_id": ad.map(|a| a.adset_id.clone()),
        "adset_name": ad.map(|a| a.adset_name.clone()),
        "campaign_id": ad.map(|a| a.campaign_id.clone()),
        "campaign_name": ad.map(|a| a.campaign_name.clone()),
        "form_id": lead.form,
        "is_organic": ad.is_none(),
        "platform": "fb",
        "field_data": lead.answers.iter()
            .map(|(name, values)| json!({"name": name, "values": values}))
            .collect::<Vec<_>>(),
    });
    let answer: serde_json::Map<String, Value> = asked
        .iter()
        .filter_map(|f| {
            all.get(*f)
                .filter(|v| !v.is_null())
                .map(|v| ((*f).to_owned(), v.clone()))
        })
        .collect();
    Some(Json(Value::Object(answer)).into_response())
}

impl FakeMeta {
    /// Where submitted leads' webhooks go: the stack's
    /// `/v1/webhooks/meta`.
    pub fn set_webhook_url(&self, url: &str) {
        self.lock().webhook_url = Some(url.to_owned());
    }

    /// Submits a lead on a sample form and delivers its webhook as asked.
    ///
    /// # Errors
    /// A message naming what is not the fake's (Page, form, ad).
    pub async fn submit_lead(&self, sub: Submission) -> Result<Submitted, String> {
        submit_lead(&self.shared, sub).await
    }

    /// Delivers every webhook held back ([`Delivery::Late`]); answers how
    /// many the stack took.
    pub async fn deliver_late(&self) -> usize {
        let (held, url) = {
            let mut inner = self.lock();
            (
                std::mem::take(&mut inner.held_deliveries),
                inner.webhook_url.clone(),
            )
        };
        let mut delivered = 0;
        for body in held {
            delivered += usize::from(deliver(url.as_deref(), &body).await);
        }
        delivered
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, crate::server::Inner> {
    shared.inner.lock().unwrap_or_else(|e| e.into_inner())
}

async fn submit_lead(shared: &Shared, sub: Submission) -> Result<Submitted, String> {
    let ad = match &sub.ad_id {
        Some(id) => Some(
            shared
                .accounts
                .iter()
                .flat_map(|a| &a.ads)
                .find(|a| &a.id == id)
                .cloned()
                .ok_or_else(|| format!("adId: {id} is not a sample ad"))?,
        ),
        None => None,
    };
    if !SAMPLE_FORMS
        .iter()
        .any(|(form, page, _)| *form == sub.form_id && *page == sub.page_id)
    {
        return Err("formId: not a form of that Page".into());
    }
    let created = shared.clock.now_ms().div_euclid(1_000);
    let (leadgen_id, url) = {
        let mut inner = lock(shared);
        inner.next_lead += 1;
        let id = (900_000_000_000_000u64 + inner.next_lead).to_string();
        inner.form_leads.insert(
            id.clone(),
            StoredLead {
                page: sub.page_id.clone(),
                form: sub.form_id.clone(),
                ad: ad.clone(),
                created,
                answers: sub.answers,
            },
        );
        (id, inner.webhook_url.clone())
    };
    let body = json!({"object": "page", "entry": [{
        "id": sub.page_id, "time": created,
        "changes": [{"field": "leadgen", "value": {
            "leadgen_id": leadgen_id, "page_id": sub.page_id, "form_id": sub.form_id,
            "ad_id": ad.as_ref().map(|a| a.id.clone()),
            "adgroup_id": ad.as_ref().map(|a| a.adset_id.clone()),
            "created_time": created,
        }}],
    }]})
    .to_string();
    let times = match sub.delivery {
        Delivery::Once => 1,
        Delivery::Twice => 2,
        Delivery::Never => 0,
        Delivery::Late => {
            lock(shared).held_deliveries.push(body.clone());
            0
        }
    };
    let mut delivered = 0;
    for _ in 0..times {
        delivered += usize::from(deliver(url.as_deref(), &body).await);
    }
    Ok(Submitted {
        leadgen_id,
        delivered,
    })
}

/// One signed POST of `body` to the stack; whether it answered 200.
async fn deliver(url: Option<&str>, body: &str) -> bool {
    let Some(url) = url else {
        return false;
    };
    let sent = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-hub-signature-256", signature(body.as_bytes()))
        .body(body.to_owned())
        .send()
        .await;
    sent.is_ok_and(|r| r.status() == StatusCode::OK)
}

/// `POST /_fake/leads`: [`FakeMeta::submit_lead`] over HTTP.
pub(crate) async fn submit(shared: &Shared, body: &[u8]) -> Response {
    let sub: Submission = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    match submit_lead(shared, sub).await {
        Ok(done) => (StatusCode::CREATED, Json(done)).into_response(),
        Err(e) => (StatusCode::BAD_REQUEST, e).into_response(),
    }
}
