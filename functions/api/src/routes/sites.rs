//! Sites: `PUT /v1/sites/{siteId}` registers or updates one (host only);
//! `GET /v1/sites` lists those in the caller's grant (every site for the
//! host, by id, a page at a time); `GET /v1/sites/{siteId}` reads one.

use adtrail_domain::{Currency, SiteId};
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, plain_text, query};
use crate::views::{SiteView, SitesView};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SiteBody {
    name: String,
    currency: String,
    country: Option<String>,
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

/// The most sites one page of the list holds.
const MAX_LIST: i32 = 100;

pub(crate) async fn list_sites(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let params = query(req, &["after", "limit"])?;
    let limit = match params.get("limit") {
        None => MAX_LIST,
        Some(l) => l
            .parse::<i32>()
            .ok()
            .filter(|l| (1..=MAX_LIST).contains(l))
            .ok_or_else(|| ApiError::invalid("limit: must be 1 to 100"))?,
    };
    let after = params
        .get("after")
        .map(|a| SiteId::parse("after", a))
        .transpose()?;
    let after = after.as_ref().map(SiteId::as_str);
    // A dashboard sees the sites of its grant; the host, every site.
    let ids: Vec<String> = if caller.is_host() {
        api.store.sites().site_ids(after, limit).await?
    } else {
        caller
            .sites
            .iter()
            .filter(|s| after.is_none_or(|a| s.as_str() > a))
            .filter(|s| caller.may_read(s).is_ok())
            .take(usize::try_from(limit).unwrap_or(100))
            .cloned()
            .collect()
    };
    let full = ids.len() == usize::try_from(limit).unwrap_or(100);
    let next = full.then(|| ids.last().cloned()).flatten();
    let sites: Vec<SiteView> = api
        .store
        .sites()
        .get_sites(&ids)
        .await?
        .into_iter()
        .map(SiteView::from)
        .collect();
    json(200, &SitesView { sites, next })
}

pub(crate) async fn get_site(
    api: &Api,
    caller: &Caller,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    caller.may_read(site.as_str())?;
    match api.store.sites().get_site(site.as_str()).await? {
        Some(found) => json(200, &SiteView::from(found)),
        None => Err(ApiError::no_site()),
    }
}
