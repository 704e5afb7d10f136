//! Storing an owner's Meta token, the use case that connecting, refreshing
//! and logging in share: the token is checked with Meta, what it reaches is
//! listed (with Lead Ads on, its Pages and their tokens too), it is sealed
//! with KMS and stored, and the owner's links and pixels are lined up with
//! the new listing.

use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::leadads::OwnerPage;
use adtrail_store::connections::{ListedAccount, ListedPixel};
use adtrail_store::seal::Purpose;

use crate::Api;
use crate::error::ApiError;

/// Accounts whose pixels a connect lists.
const MAX_PIXEL_ACCOUNTS: usize = 100;
/// Pixel listings in flight at once: a big agency's connect answers
/// within API Gateway's 29 seconds even with Meta at 300 ms a call.
const PIXEL_LISTING_CONCURRENCY: usize = 10;

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
        .store
        .connections()
        .get_connection(owner)
        .await?
        .map(|c| c.pixels)
        .unwrap_or_default();
    let pixels = list_pixels(api, &token, &accounts, known).await;
    if api.lead_ads {
        store_pages(api, owner, &token).await?;
    }
    let sealed = api
        .store
        .sealer()
        .seal(owner, Purpose::MetaConnection, &token)
        .await?;
    drop(token);
    let now = api.clock.now_ms();
    let version = uuid::Uuid::new_v4().to_string();
    let stored = api
        .store
        .connections()
        .put_connection(owner, sealed, &version, &accounts, &pixels, now)
        .await?;
    align_links(api, owner, &stored.accounts, now).await?;
    align_pixels(api, owner, &stored.pixels).await?;
    Ok((stored, me))
}

/// The owner's Pages with their tokens (Lead Ads on): listed from Meta,
/// each Page's token sealed under the owner and the Page, the listing
/// stored whole. When Meta fails, the Pages already stored are kept.
async fn store_pages(api: &Api, owner: &str, token: &str) -> Result<(), ApiError> {
    use futures::StreamExt;
    let listed = match api.graph.pages(token).await {
        Ok(pages) => pages,
        Err(e) => {
            tracing::warn!(error = %e, "could not list the owner's Pages; the stored ones stay");
            return Ok(());
        }
    };
    let now = api.clock.now_ms();
    let sealed: Vec<Result<OwnerPage, ApiError>> = futures::stream::iter(listed)
        .map(|p| async move {
            let sealed_token = match &p.access_token {
                Some(t) => api.store.sealer().seal_page(owner, &p.id, t).await?,
                None => vec![],
            };
            Ok(OwnerPage {
                owner_key: owner.to_owned(),
                page_id: p.id,
                name: p.name,
                tasks: p.tasks,
                sealed_token,
                token_version: uuid::Uuid::new_v4().to_string(),
                listed_at: now,
            })
        })
        .buffered(PIXEL_LISTING_CONCURRENCY)
        .collect()
        .await;
    let pages = sealed.into_iter().collect::<Result<Vec<_>, _>>()?;
    api.store.pages().replace_pages(owner, &pages).await?;
    Ok(())
}

/// Lines the pixels the owner set with its connection up with what the
/// token lists: one it no longer lists shows `PIXEL_NOT_GRANTED` and sends
/// nothing; listed again, it sends again.
async fn align_pixels(api: &Api, owner: &str, listed: &[ListedPixel]) -> Result<(), ApiError> {
    for site in api.store.pixels().owner_pixels(owner).await? {
        let Some(pixel) = api.store.pixels().get_pixel(&site).await? else {
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
        api.store
            .pixels()
            .set_pixel_grant(&site, owner, granted, error.as_deref())
            .await?;
    }
    Ok(())
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
    use futures::StreamExt;
    let mut found: Vec<ListedPixel> = vec![];
    // In the accounts' order, several at once.
    let ids: Vec<String> = accounts
        .iter()
        .take(MAX_PIXEL_ACCOUNTS)
        .map(|a| a.ad_account_id.clone())
        .collect();
    let mut listings = futures::stream::iter(ids)
        .map(|id| async move { api.graph.ad_pixels(token, &id).await })
        .buffered(PIXEL_LISTING_CONCURRENCY);
    while let Some(listing) = listings.next().await {
        match listing {
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

/// Lines the owner's links up with what the new token lists: a link the
/// token lists resumes if a dead token (or a missing grant) had stopped it;
/// one it does not list stops with `AD_ACCOUNT_NOT_GRANTED`.
async fn align_links(
    api: &Api,
    owner: &str,
    listed: &[ListedAccount],
    now: i64,
) -> Result<(), ApiError> {
    for (site, account) in api.store.links().owner_links(owner).await? {
        let Some(link) = api.store.links().get_link(&site, &account).await? else {
            continue;
        };
        if listed.iter().any(|a| a.ad_account_id == account) {
            if link.next_sync_at.is_none() {
                api.store.links().resume_link(&link, now).await?;
            }
        } else {
            let error = last_error(
                LastErrorCode::AdAccountNotGranted,
                "the connection's token no longer lists this ad account",
            );
            api.store
                .links()
                .pause_link(&site, &account, &error)
                .await?;
        }
    }
    Ok(())
}
