//! `PUT|GET /v1/meta/connections/{ownerKey}`: store a Meta token for an
//! owner (validated with Meta, sealed with KMS) and read the connection back,
//! never with its token.

use adtrail_domain::OwnerKey;
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_store::connections::{Authorization, ListedAccount, ListedPixel};
use adtrail_store::seal::Purpose;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::json_body;
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectionBody {
    access_token: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccountView<'a> {
    ad_account_id: &'a str,
    name: &'a str,
    currency: &'a str,
    timezone: &'a str,
    /// In the connection's own listing: the site the account feeds (`null`
    /// when none, or when that site is outside the caller's grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    linked_site_id: Option<Option<&'a str>>,
    /// Linked to a site the caller may not see.
    #[serde(skip_serializing_if = "Option::is_none")]
    linked_outside_scope: Option<bool>,
}

impl<'a> AccountView<'a> {
    fn of(a: &'a ListedAccount) -> Self {
        Self {
            ad_account_id: &a.ad_account_id,
            name: &a.name,
            currency: &a.currency,
            timezone: &a.timezone,
            linked_site_id: None,
            linked_outside_scope: None,
        }
    }
}

/// Accounts whose pixels a connect lists.
const MAX_PIXEL_ACCOUNTS: usize = 100;

/// A token Meta could issue: printable, no spaces, bounded.
pub(crate) fn check_token(token: &str) -> Result<(), ApiError> {
    if token.is_empty() || token.len() > 4_096 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "accessToken: must be 1 to 4096 printable characters without spaces",
        ));
    }
    Ok(())
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
    api.aws
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
    let Some(connection) = api.aws.get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let token = api
        .aws
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
    let mut unlinked = 0;
    for (site, account) in api.aws.owner_links(&owner).await? {
        if api.aws.unlink_account(&site, &account, now).await? {
            unlinked += 1;
        }
    }
    let mut pixels_removed = 0;
    for site in api.aws.owner_pixels(&owner).await? {
        if let Some(p) = api.aws.get_pixel(&site).await?
            && p.owner() == Some(owner.as_str())
            && api.aws.delete_pixel(&site).await?
        {
            pixels_removed += 1;
        }
    }
    let connection = api.aws.delete_connection(&owner).await?;
    json(
        200,
        &serde_json::json!({
            "ownerKey": owner,
            "removed": connection || unlinked > 0 || pixels_removed > 0,
            "unlinked": unlinked,
            "pixelsRemoved": pixels_removed,
        }),
    )
}

/// Checks a token with Meta, lists what it reaches, seals and stores it,
/// and lines the owner's links up with the new listing.
pub(crate) async fn store_connection(
    api: &Api,
    owner: &str,
    token: String,
) -> Result<(adtrail_store::connections::Connection, adtrail_meta::Me), ApiError> {
    let me = api.graph.me(&token).await?;
    let accounts: Vec<ListedAccount> = api
        .graph
        .ad_accounts(&token)
        .await?
        .into_iter()
        .map(|a| ListedAccount {
            ad_account_id: a.id,
            name: a.name,
            currency: a.currency,
            timezone: a.timezone,
        })
        .collect();
    let known = api
        .aws
        .get_connection(owner)
        .await?
        .map(|c| c.pixels)
        .unwrap_or_default();
    let pixels = list_pixels(api, &token, &accounts, known).await;
    let sealed = api.aws.seal(owner, Purpose::MetaConnection, &token).await?;
    drop(token);
    let now = api.clock.now_ms();
    let version = uuid::Uuid::new_v4().to_string();
    let stored = api
        .aws
        .put_connection(owner, sealed, &version, &accounts, &pixels, now)
        .await?;
    align_links(api, owner, &stored.accounts, now).await?;
    align_pixels(api, owner, &stored.pixels).await?;
    Ok((stored, me))
}

/// Lines the pixels the owner set with its connection up with what the
/// token lists: one it no longer lists shows `PIXEL_NOT_GRANTED` and sends
/// nothing; listed again, it sends again.
async fn align_pixels(api: &Api, owner: &str, listed: &[ListedPixel]) -> Result<(), ApiError> {
    for site in api.aws.owner_pixels(owner).await? {
        let Some(pixel) = api.aws.get_pixel(&site).await? else {
            continue;
        };
        if !matches!(&pixel.source, adtrail_domain::pixels::PixelSource::Connection { owner_key } if owner_key == owner)
        {
            continue;
        }
        let granted = listed.iter().any(|p| p.pixel_id == pixel.pixel_id);
        // Already as the listing says.
        if granted != pixel.not_granted {
            continue;
        }
        let error = (!granted).then(|| {
            last_error(
                LastErrorCode::PixelNotGranted,
                "the connection's token no longer lists this pixel",
            )
        });
        api.aws
            .set_pixel_grant(&site, owner, granted, error.as_deref())
            .await?;
    }
    Ok(())
}

pub(crate) fn connected_view(stored: &adtrail_store::connections::Connection) -> serde_json::Value {
    serde_json::json!({
        "ownerKey": stored.owner_key,
        "status": stored.status.as_str(),
        "adAccounts": stored.accounts.iter().map(AccountView::of).collect::<Vec<_>>(),
        "pixels": pixel_views(&stored.pixels),
    })
}

/// The pixels the token's accounts own (the first 100 accounts,
/// deduplicated). An account whose pixels the token may not read is
/// skipped; when Meta throttles or fails, the pixels already known are kept
/// beside what was found.
async fn list_pixels(
    api: &Api,
    token: &str,
    accounts: &[ListedAccount],
    known: Vec<ListedPixel>,
) -> Vec<ListedPixel> {
    let mut found: Vec<ListedPixel> = vec![];
    for account in accounts.iter().take(MAX_PIXEL_ACCOUNTS) {
        match api.graph.ad_pixels(token, &account.ad_account_id).await {
            Ok(pixels) => {
                for p in pixels {
                    if !found.iter().any(|f| f.pixel_id == p.id) {
                        found.push(ListedPixel {
                            pixel_id: p.id,
                            name: p.name,
                        });
                    }
                }
            }
            Err(e) if e.kind == GraphErrorKind::Permission => continue,
            Err(e) => {
                tracing::warn!(kind = ?e.kind, "listing pixels failed; the pixels already known are kept");
                for p in known {
                    if !found.iter().any(|f| f.pixel_id == p.pixel_id) {
                        found.push(p);
                    }
                }
                break;
            }
        }
    }
    found
}

fn pixel_views(pixels: &[ListedPixel]) -> Vec<serde_json::Value> {
    pixels
        .iter()
        .map(|p| serde_json::json!({"pixelId": p.pixel_id, "name": p.name}))
        .collect()
}

/// Lines the owner's links up with what the new token lists: a link the
/// token lists resumes if a dead token (or a missing grant) had stopped it;
/// one it does not list stops with `AD_ACCOUNT_NOT_GRANTED`.
async fn align_links(
    api: &Api,
    owner: &str,
    listed: &[ListedAccount],
    now: i64,
) -> Result<(), ApiError> {
    for (site, account) in api.aws.owner_links(owner).await? {
        let Some(link) = api.aws.get_link(&site, &account).await? else {
            continue;
        };
        if listed.iter().any(|a| a.ad_account_id == account) {
            if link.next_sync_at.is_none() {
                api.aws.resume_link(&link, now).await?;
            }
        } else {
            let error = last_error(
                LastErrorCode::AdAccountNotGranted,
                "the connection's token no longer lists this ad account",
            );
            api.aws.pause_link(&site, &account, &error).await?;
        }
    }
    Ok(())
}

pub(crate) async fn get_connection(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, false)?;
    let Some(c) = api.aws.get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let ids: Vec<String> = c.accounts.iter().map(|a| a.ad_account_id.clone()).collect();
    let claims = api.aws.account_claims(&ids).await?;
    let accounts: Vec<AccountView> = c
        .accounts
        .iter()
        .map(|a| {
            let site = claims.get(&a.ad_account_id).map(String::as_str);
            let visible = site.filter(|s| caller.may_read(s).is_ok());
            AccountView {
                linked_site_id: Some(visible),
                linked_outside_scope: Some(site.is_some() && visible.is_none()),
                ..AccountView::of(a)
            }
        })
        .collect();
    json(
        200,
        &serde_json::json!({
            "ownerKey": c.owner_key,
            "status": c.status.as_str(),
            "invalidSince": c.invalid_since,
            "authorizedBy": c.authorized_by.as_ref().map(|(id, name)| serde_json::json!({"id": id, "name": name})),
            "authorizedAt": c.authorized_at,
            // `null` for a token that never ends, and for a pasted one,
            // whose end is not asked; `expiringSoon` is set at login and
            // by the sweeper.
            "expiresAt": c.expires_at,
            "expiringSoon": c.expiring_soon,
            "lastError": c.last_error,
            "createdAt": c.created_at,
            "updatedAt": c.updated_at,
            "adAccounts": accounts,
            "pixels": pixel_views(&c.pixels),
        }),
    )
}

/// The owner a path names, after the caller's rights.
pub(crate) fn resolve_owner(caller: &Caller, named: &str, write: bool) -> Result<String, ApiError> {
    let owner = caller.owner(named, write)?;
    OwnerKey::parse("ownerKey", &owner)?;
    Ok(owner)
}

/// A write over a whole owner (reconnecting it) by a dashboard needs every
/// site the owner feeds inside the dashboard's grant: the sites outside it
/// are named, so whoever holds them can act.
///
/// # Errors
/// `FORBIDDEN` naming the sites outside the grant.
pub(crate) async fn require_whole_owner(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<(), ApiError> {
    if caller.is_host() {
        return Ok(());
    }
    let mut outside: Vec<String> = api
        .aws
        .owner_links(owner)
        .await?
        .into_iter()
        .map(|(site, _)| site)
        .filter(|site| !caller.sites.contains(site))
        .collect();
    outside.sort();
    outside.dedup();
    if outside.is_empty() {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "ownerKey: this owner still feeds sites outside the token's grant: {}",
        outside.join(", ")
    )))
}

/// The owner a write acts as, for the ownership rules: a dashboard always
/// its own; a host the `ownerKey` it names, or none (the host itself, which
/// may change what any owner made).
///
/// # Errors
/// `FORBIDDEN` for a dashboard naming another owner; `INVALID_ARGUMENT`
/// for a malformed key.
pub(crate) fn acting_owner(
    caller: &Caller,
    named: Option<&String>,
) -> Result<Option<String>, ApiError> {
    match (named, caller.is_host()) {
        (Some(owner), _) => Ok(Some(resolve_owner(caller, owner, true)?)),
        (None, true) => Ok(None),
        (None, false) => Ok(Some(resolve_owner(caller, "me", true)?)),
    }
}
