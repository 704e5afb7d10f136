//! Linking a Facebook Page to a site for Lead Ads (`PUT`) and unlinking it
//! (`DELETE /v1/sites/{siteId}/pages/{pageId}`), under the ad accounts'
//! ownership rules: one Page feeds one site; a dashboard links and unlinks
//! only as its own owner, and a host with `onlyOwn` is refused what another
//! owner made. Linking subscribes the app to the Page's `leadgen` field
//! with the Page's own token (unsealed for that call only); unlinking
//! removes the subscription.

use adtrail_domain::SiteId;
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::leadads::{MAX_BACKFILL_DAYS, OwnerPage, PageLink};
use adtrail_domain::time::DAY_MS;
use lambda_http::{Body, Request, Response};

use crate::auth::{Caller, acting_owner, guards_ownership, resolve_owner};
use crate::error::ApiError;
use crate::input::{json_body, query};
use crate::routes::webhooks::lead_ads_on;
use crate::views::{PageLinkView, PageUnlinkedView};
use crate::{Api, json};

/// `PUT …/pages/{pageId}`: the owner, and how many days of the Page's
/// past leads to bring (at most 90, Meta's reach).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LinkPageBody {
    owner_key: String,
    #[serde(default)]
    only_own: bool,
    #[serde(default, deserialize_with = "crate::input::optional_whole_number")]
    backfill_days: Option<i64>,
}

/// Unlinks a Page from its site: the app's subscription goes first (if
/// Meta fails, the link still goes: leads of an unlinked Page are dropped,
/// and the failure is logged), then the link and the Page's forms.
/// Answers whether a link was removed.
pub(crate) async fn unlink_and_unsubscribe(api: &Api, link: &PageLink) -> Result<bool, ApiError> {
    let listed = api.store.pages().list_pages(&link.owner_key).await?;
    if let Some(page) = listed
        .iter()
        .find(|p| p.page_id == link.page_id && p.leads_allowed())
    {
        let token = page_token(api, page).await?;
        if let Err(e) = api.graph.unsubscribe_page(&token, &link.page_id).await {
            tracing::warn!(error = %e, "Meta kept the Page's subscription; its leads are dropped");
        }
    }
    let removed = api
        .store
        .pages()
        .unlink_page(&link.site_id, &link.page_id)
        .await?;
    api.store
        .forms()
        .replace_page_forms(&link.site_id, &link.page_id, &[])
        .await?;
    Ok(removed)
}

/// The link of a Page that feeds `site`, or `404`.
pub(crate) async fn site_page_link(
    api: &Api,
    site: &SiteId,
    page_id: &str,
) -> Result<PageLink, ApiError> {
    api.store
        .pages()
        .page_link(page_id)
        .await?
        .filter(|l| l.site_id == site.as_str())
        .ok_or_else(|| ApiError::not_found("pageId: the Page does not feed this site"))
}

/// The Page's token, opened for one call.
async fn page_token(api: &Api, page: &OwnerPage) -> Result<String, ApiError> {
    Ok(api
        .store
        .sealer()
        .unseal_page(&page.owner_key, &page.page_id, &page.sealed_token)
        .await?)
}

pub(crate) async fn link_page(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    page_id: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("pageId", page_id)?;
    let body: LinkPageBody = json_body(req)?;
    let backfill_days = body.backfill_days.unwrap_or(0);
    if !(0..=MAX_BACKFILL_DAYS).contains(&backfill_days) {
        return Err(ApiError::invalid(format!(
            "backfillDays: 0 to {MAX_BACKFILL_DAYS} days"
        )));
    }
    caller.may_configure(site.as_str())?;
    let owner = resolve_owner(caller, &body.owner_key, true)?;
    lead_ads_on(api)?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let pages = api.store.pages().list_pages(&owner).await?;
    let Some(page) = pages.iter().find(|p| p.page_id == page_id) else {
        return Err(ApiError::not_found(
            "pageId: the owner's token does not list this Page (connect or refresh first)",
        ));
    };
    if !page.leads_allowed() {
        return Err(ApiError::new(
            ErrorCode::MetaPermissionMissing,
            "pageId: the token's user cannot ADVERTISE on this Page, which Meta asks to read its leads",
        ));
    }
    if let Some(existing) = api.store.pages().page_link(page_id).await? {
        if existing.site_id != site.as_str() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "pageId: the Page already feeds another site; unlink it there first",
            ));
        }
        if existing.owner_key != owner && guards_ownership(caller, body.only_own) {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "pageId: another owner linked this Page to the site",
            ));
        }
        return json(200, &PageLinkView::of(&existing));
    }
    let token = page_token(api, page).await?;
    api.graph.subscribe_page(&token, page_id).await?;
    drop(token);
    let now = api.clock.now_ms();
    let link = PageLink {
        site_id: site.as_str().to_owned(),
        page_id: page_id.to_owned(),
        owner_key: owner,
        subscribed_at: now,
        // The first reconciliation, due at once, reads the backfill.
        reconciled_through: now - backfill_days * DAY_MS,
        last_reconcile_at: None,
        last_error: None,
    };
    if !api.store.pages().link_page(&link).await? {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "pageId: the Page was linked meanwhile; read it again",
        ));
    }
    // Its forms, for the rules; Meta failing here costs nothing a refresh
    // (or the Page's first lead) does not read again.
    if let Err(e) =
        crate::routes::forms::read_page_forms(api, site.as_str(), &link.owner_key, page_id).await
    {
        tracing::warn!(error = %e, "the Page's forms were not read; refresh them");
    }
    json(201, &PageLinkView::of(&link))
}

pub(crate) async fn unlink_page(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    page_id: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("pageId", page_id)?;
    let params = query(req, &["ownerKey"])?;
    caller.may_configure(site.as_str())?;
    let acting = acting_owner(caller, params.get("ownerKey"))?;
    lead_ads_on(api)?;
    let existing = site_page_link(api, &site, page_id).await?;
    if acting.as_ref().is_some_and(|o| o != &existing.owner_key) {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "pageId: another owner linked this Page; only it may unlink it",
        ));
    }
    let removed = unlink_and_unsubscribe(api, &existing).await?;
    json(
        200,
        &PageUnlinkedView {
            site_id: site.as_str(),
            page_id,
            removed,
        },
    )
}
