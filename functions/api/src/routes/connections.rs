//! `PUT|GET /v1/meta/connections/{ownerKey}`: store a Meta token for an
//! owner (validated with Meta, sealed with KMS) and read the connection back,
//! never with its token.

use adtrail_store::connections::Authorization;
use adtrail_store::seal::Purpose;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::{Caller, require_whole_owner, resolve_owner};
use crate::connect::store_connection;
use crate::error::ApiError;
use crate::input::check_token;
use crate::input::json_body;
use crate::views::{
    AccountView, AuthorizedBy, ConnectionDetailView, ConnectionRemovedView, PageView, PagesView,
    connected_view, pixel_views,
};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectionBody {
    access_token: String,
}

pub(crate) async fn put_connection(
    api: &Api,
    caller: &Caller,
    req: &Request,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    let body: ConnectionBody = json_body(req)?;
    check_token(&body.access_token)?;
    require_whole_owner(api, caller, &owner).await?;
    let (stored, me) = store_connection(api, &owner, body.access_token).await?;
    // A new token is a new authorization; a refresh keeps the one before.
    // A pasted token's end is not asked.
    api.store
        .connections()
        .set_authorization(
            &owner,
            &Authorization {
                by: Some((&me.id, &me.name)),
                at: api.clock.now_ms(),
                expires_at: None,
                expiring_soon: false,
                last_error: None,
            },
        )
        .await?;
    json(200, &connected_view(&stored))
}

/// `POST /v1/meta/connections/{ownerKey}/refresh`: reads the accounts and
/// pixels again with the stored token, and lines the links up with them.
pub(crate) async fn refresh_connection(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    require_whole_owner(api, caller, &owner).await?;
    let Some(connection) = api.store.connections().get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let token = api
        .store
        .sealer()
        .unseal(&owner, Purpose::MetaConnection, &connection.sealed_token)
        .await?;
    let (stored, _) = store_connection(api, &owner, token).await?;
    json(200, &connected_view(&stored))
}

/// `DELETE /v1/meta/connections/{ownerKey}`: forgets the owner: its token,
/// every account it fed (their spend leaves in the sweeper's batches) and
/// every pixel it set, its own-token pixels included.
pub(crate) async fn delete_connection(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    require_whole_owner(api, caller, &owner).await?;
    let now = api.clock.now_ms();
    let unlinked = unlink_all(api, &owner, now).await?;
    let mut pixels_removed = 0;
    for site in api.store.pixels().owner_pixels(&owner).await? {
        if let Some(p) = api.store.pixels().get_pixel(&site).await?
            && p.owner() == Some(owner.as_str())
            && api.store.pixels().delete_pixel(&site).await?
        {
            pixels_removed += 1;
        }
    }
    let connection = api.store.connections().delete_connection(&owner).await?;
    json(
        200,
        &ConnectionRemovedView {
            owner_key: &owner,
            removed: connection || unlinked > 0 || pixels_removed > 0,
            unlinked,
            pixels_removed,
        },
    )
}

/// Unlinks every account the owner feeds: each site's links one after the
/// other (they share the site's count), up to [`UNLINK_CONCURRENCY`] sites
/// at once, so an agency's 500 links go in the time of about 60
/// transactions. Answers how many were unlinked.
async fn unlink_all(api: &Api, owner: &str, now: i64) -> Result<usize, ApiError> {
    use futures::StreamExt;
    let mut by_site: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (site, account) in api.store.links().owner_links(owner).await? {
        by_site.entry(site).or_default().push(account);
    }
    let done: Vec<Result<usize, ApiError>> = futures::stream::iter(by_site)
        .map(|(site, accounts)| async move {
            let mut unlinked = 0;
            for account in accounts {
                if api
                    .store
                    .links()
                    .unlink_for_removal(&site, &account, now)
                    .await?
                {
                    unlinked += 1;
                }
            }
            Ok(unlinked)
        })
        .buffer_unordered(UNLINK_CONCURRENCY)
        .collect()
        .await;
    done.into_iter().sum()
}

/// Sites whose links a removal unlinks at once.
const UNLINK_CONCURRENCY: usize = 8;

pub(crate) async fn get_connection(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, false)?;
    let Some(c) = api.store.connections().get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let ids: Vec<String> = c.accounts.iter().map(|a| a.ad_account_id.clone()).collect();
    let claims = api.store.links().account_claims(&ids).await?;
    let accounts: Vec<AccountView> = c
        .accounts
        .iter()
        .map(|a| {
            let site = claims.get(&a.ad_account_id).map(String::as_str);
            let visible = site.filter(|s| caller.may_read(s).is_ok());
            let mut view = AccountView::of(a);
            view.linked_site_id = Some(visible);
            view.linked_outside_scope = Some(site.is_some() && visible.is_none());
            view
        })
        .collect();
    json(
        200,
        &ConnectionDetailView {
            owner_key: &c.owner_key,
            status: c.status.as_str(),
            invalid_since: c.invalid_since,
            authorized_by: c
                .authorized_by
                .as_ref()
                .map(|(id, name)| AuthorizedBy { id, name }),
            authorized_at: c.authorized_at,
            expires_at: c.expires_at,
            expiring_soon: c.expiring_soon,
            last_error: c.last_error.as_deref(),
            created_at: c.created_at,
            updated_at: c.updated_at,
            ad_accounts: accounts,
            pixels: pixel_views(&c.pixels),
        },
    )
}

/// Why a Page's leads cannot be read, if they cannot: its user may not
/// `ADVERTISE` there (Meta's condition), or its last reconciliation's error.
fn page_error(
    p: &adtrail_domain::leadads::OwnerPage,
    link: Option<&adtrail_domain::leadads::PageLink>,
) -> Option<String> {
    if !p.leads_allowed() {
        return Some(adtrail_domain::error_codes::last_error(
            adtrail_domain::error_codes::LastErrorCode::MetaPermissionMissing,
            "the token's user cannot ADVERTISE on this Page, which Meta asks to read its leads",
        ));
    }
    link.and_then(|l| l.last_error.clone())
}

/// `GET /v1/meta/connections/{ownerKey}/pages`: the Facebook Pages the
/// owner's token lists (Lead Ads on), with the tasks its user may do,
/// whether their form leads can be read (`leadsAllowed`: the Page's token,
/// and the `ADVERTISE` task) and the site each feeds (hidden outside the
/// caller's grant). Never a token.
pub(crate) async fn pages(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, false)?;
    super::webhooks::lead_ads_on(api)?;
    if api
        .store
        .connections()
        .get_connection(&owner)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    }
    let listed = api.store.pages().list_pages(&owner).await?;
    let ids: Vec<&str> = listed.iter().map(|p| p.page_id.as_str()).collect();
    let links = api.store.pages().page_links(&ids).await?;
    let mut pages: Vec<PageView> = vec![];
    for p in &listed {
        // The site it feeds, hidden outside the caller's grant.
        let link = links.iter().find(|l| l.page_id == p.page_id);
        let site = link.map(|l| l.site_id.as_str());
        let visible = site.filter(|s| caller.may_read(s).is_ok());
        let shown = link.filter(|_| visible.is_some());
        pages.push(PageView {
            page_id: &p.page_id,
            name: &p.name,
            tasks: &p.tasks,
            leads_allowed: p.leads_allowed(),
            listed_at: p.listed_at,
            linked_site_id: visible,
            linked_outside_scope: site.is_some() && visible.is_none(),
            subscribed_at: shown.map(|l| l.subscribed_at),
            last_reconcile_at: shown.and_then(|l| l.last_reconcile_at),
            last_error: page_error(p, shown),
            // Linked by this owner (a dashboard's screens mark the others').
            own: shown.map(|l| l.owner_key == owner),
        });
    }
    json(
        200,
        &PagesView {
            owner_key: &owner,
            pages,
        },
    )
}
