//! Linking ad accounts to sites, unlinking them, and asking for a sync now.

use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::{AdAccountId, SiteId};
use adtrail_store::linking::LinkError;
use lambda_http::{Body, Request, Response};
use serde_json::json;

use crate::auth::{Caller, acting_owner, guards_ownership, resolve_owner};
use crate::error::ApiError;
use crate::input::{OwnerBody, json_body, query};
use crate::views::{SyncRequestedView, UnlinkPreviewView, UnlinkedView, account_view};
use crate::{Api, json};

pub(crate) async fn link(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    account: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let account = AdAccountId::parse("adAccountId", account)?;
    let body: OwnerBody = json_body(req)?;
    caller.may_configure(site.as_str())?;
    let owner = resolve_owner(caller, &body.owner_key, true)?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let Some(connection) = api.store.connections().get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let Some(listed) = connection.listed(account.as_str()).cloned() else {
        return Err(ApiError::not_found(
            "adAccountId: the connection's token does not list this ad account",
        ));
    };
    if let Some(existing) = api
        .store
        .links()
        .get_link(site.as_str(), account.as_str())
        .await?
    {
        if existing.owner_key != owner && guards_ownership(caller, body.only_own) {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "adAccountId: another owner linked this ad account to the site",
            ));
        }
        // Linking again what is already linked changes nothing.
        return json(200, &account_view(&existing, None));
    }
    match api
        .store
        .links()
        .link_account(site.as_str(), &owner, &listed, api.clock.now_ms())
        .await
    {
        Ok(link) => {
            request_dispatch(api, site.as_str()).await;
            json(201, &account_view(&link, None))
        }
        Err(LinkError::Claimed) => Err(ApiError::new(
            ErrorCode::Conflict,
            "adAccountId: the ad account already feeds another site; unlink it there first",
        )),
        Err(LinkError::SiteLimit) => Err(ApiError::new(
            ErrorCode::LimitExceeded,
            "siteId: a site links at most 20 ad accounts",
        )),
        Err(LinkError::ConnectionLimit) => Err(ApiError::new(
            ErrorCode::LimitExceeded,
            "ownerKey: a connection links at most 500 ad accounts",
        )),
        Err(LinkError::Gone) => Err(ApiError::not_found(
            "siteId: the site or the connection was removed meanwhile",
        )),
        Err(LinkError::Store(e)) => Err(e.into()),
    }
}

pub(crate) async fn unlink(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    account: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let account = AdAccountId::parse("adAccountId", account)?;
    let params = query(req, &["ownerKey"])?;
    caller.may_configure(site.as_str())?;
    // A dashboard undoes only its own link; a host naming an owner asks
    // for the same refusal.
    let acting = acting_owner(caller, params.get("ownerKey"))?;
    if let (Some(owner), Some(existing)) = (
        &acting,
        api.store
            .links()
            .get_link(site.as_str(), account.as_str())
            .await?,
    ) && &existing.owner_key != owner
    {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "adAccountId: another owner linked this ad account; only it may unlink it",
        ));
    }
    if !api
        .store
        .links()
        .unlink_account(site.as_str(), account.as_str(), api.clock.now_ms())
        .await?
    {
        return Err(ApiError::not_found(
            "adAccountId: the ad account is not linked to this site",
        ));
    }
    json(
        200,
        &UnlinkedView {
            site_id: site.as_str(),
            ad_account_id: account.as_str(),
            unlinked: true,
        },
    )
}

/// `GET …/ad-accounts/{adAccountId}/unlink-preview`: what unlinking would
/// take from the site's reports: the account's spend there, the days it
/// covers and the campaigns of the catalog filed under it. `partial` when
/// the account has not finished its first backfill (more spend may come)
/// or the catalog read stopped at its cap.
pub(crate) async fn unlink_preview(
    api: &Api,
    caller: &Caller,
    site: &str,
    account: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let account = AdAccountId::parse("adAccountId", account)?;
    caller.may_read(site.as_str())?;
    let Some(link) = api
        .store
        .links()
        .get_link(site.as_str(), account.as_str())
        .await?
    else {
        return Err(ApiError::not_found(
            "adAccountId: the ad account is not linked to this site",
        ));
    };
    let sums = api
        .store
        .spend()
        .day_sums(site.as_str(), account.as_str(), 0, 9_999_999_999_999)
        .await?;
    let spend: i64 = sums.values().map(|f| f.spend_cents).sum();
    let catalog = api.store.catalog().site_catalog(site.as_str()).await?;
    let mut campaigns: Vec<&str> = catalog
        .values()
        .filter(|e| e.ad_account_id.as_deref() == Some(account.as_str()))
        .filter_map(|e| e.campaign_id.as_deref())
        .collect();
    campaigns.sort_unstable();
    campaigns.dedup();
    let partial = !link.synced() || catalog.len() >= adtrail_store::catalog::MAX_CATALOG;
    json(
        200,
        &UnlinkPreviewView {
            site_id: site.as_str(),
            ad_account_id: account.as_str(),
            spend_cents: spend,
            currency: &link.currency,
            days: sums.len(),
            campaigns: campaigns.len(),
            partial,
        },
    )
}

pub(crate) async fn sync_now(
    api: &Api,
    caller: &Caller,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    caller.may_configure(site.as_str())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let links = api.store.links().site_links(site.as_str()).await?;
    let now = api.clock.now_ms();
    for link in &links {
        api.store
            .links()
            .request_sync(&link.site_id, &link.ad_account_id, now)
            .await?;
    }
    request_dispatch(api, site.as_str()).await;
    json(
        202,
        &SyncRequestedView {
            site_id: site.as_str(),
            requested: links.len(),
        },
    )
}

/// Tells the dispatcher (through the bus rule) that work is due now rather
/// than at the next minute. Best effort: the schedule runs it anyway.
async fn request_dispatch(api: &Api, site: &str) {
    if let Err(error) = api
        .store
        .bus()
        .put_event("SyncRequested", &json!({"siteId": site}))
        .await
    {
        tracing::warn!(error = %error, "could not put SyncRequested on the bus");
    }
}
