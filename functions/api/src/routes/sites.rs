//! Sites: `PUT /v1/sites/{siteId}` registers or updates one (host only);
//! `GET /v1/sites` lists those in the caller's grant (every site for the
//! host, by id, a page at a time); `GET /v1/sites/{siteId}` reads one;
//! `DELETE /v1/sites/{siteId}` (host only) erases one: its accounts and
//! Pages unlinked, its pixel removed and the site gone at once, everything
//! else deleted by the sweeper in batches; asked again while that runs, it
//! answers the erasure's progress.

use adtrail_domain::{Currency, SiteId};
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, plain_text, query};
use crate::routes::pages::unlink_and_unsubscribe;
use crate::views::{ErasureView, SiteView, SitesView};
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

pub(crate) async fn delete_site(
    api: &Api,
    caller: &Caller,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    let sites = api.store.sites();
    if sites.get_site(site.as_str()).await?.is_none() {
        return match sites.erasure(site.as_str()).await? {
            Some(erasure) => json(202, &ErasureView::of(&erasure)),
            None => Err(ApiError::no_site()),
        };
    }
    let now = api.clock.now_ms();
    // Its forms, before unlinking its Pages forgets them: the erasure finds
    // their leads and counters by them.
    let forms = api
        .store
        .forms()
        .site_forms(site.as_str())
        .await?
        .forms
        .into_iter()
        .map(|f| f.form_id)
        .collect();
    // What others index by the site goes first, as each route unlinks it:
    // an account's claim and its spend's purge, a Page's subscription.
    for link in api.store.links().site_links(site.as_str()).await? {
        api.store
            .links()
            .unlink_account(site.as_str(), &link.ad_account_id, now)
            .await?;
    }
    for page in api.store.pages().site_pages(site.as_str()).await? {
        if let Some(link) = api.store.pages().page_link(&page).await? {
            unlink_and_unsubscribe(api, &link).await?;
        }
    }
    api.store.pixels().delete_pixel(site.as_str()).await?;
    let erasure = sites.begin_erase(site.as_str(), forms, now).await?;
    tracing::info!(site_id = %site, "site erasure started");
    json(202, &ErasureView::of(&erasure))
}
