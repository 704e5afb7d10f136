//! `PUT /v1/sites/{siteId}`: register or update a site (host only).

use adtrail_domain::{Currency, SiteId};
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, plain_text};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SiteBody {
    name: String,
    currency: String,
    country: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SiteView {
    pub site_id: String,
    pub name: String,
    pub currency: String,
    pub country: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl From<adtrail_store::sites::Site> for SiteView {
    fn from(s: adtrail_store::sites::Site) -> Self {
        Self {
            site_id: s.site_id,
            name: s.name,
            currency: s.currency,
            country: s.country,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

pub(crate) async fn put_site(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    let body: SiteBody = json_body(req)?;
    let name = plain_text("name", &body.name, 200)?;
    let currency = Currency::parse(&body.currency).map_err(|_| {
        ApiError::invalid("currency: must be an ISO 4217 currency in use (e.g. BRL, USD)")
    })?;
    let country = body
        .country
        .map(|c| {
            if c.len() == 2 && c.bytes().all(|b| b.is_ascii_alphabetic()) {
                Ok(c.to_ascii_lowercase())
            } else {
                Err(ApiError::invalid(
                    "country: must be an ISO 3166-1 alpha-2 code",
                ))
            }
        })
        .transpose()?;
    let stored = api
        .store
        .sites()
        .put_site(
            site.as_str(),
            &name,
            currency.as_str(),
            country.as_deref(),
            api.clock.now_ms(),
        )
        .await?;
    json(200, &SiteView::from(stored))
}
