//! `/v1/sites/{siteId}/destinations[/{slug}]`: the platform accounts a
//! site's conversions go to. A registration names the platform, its ids,
//! its test mode and credentials (sealed with KMS under the site and slug,
//! never answered); a slug keeps its platform and an archived slug stays
//! archived. The site's Meta pixel is listed as the destination `meta` and
//! keeps its own routes.

mod input;
mod metrics;

pub(crate) use metrics::destination_metrics;

use adtrail_domain::SiteId;
use adtrail_domain::destinations::{
    Account, Credentials, Destination, MAX_DESTINATIONS, MAX_LIVE_DESTINATIONS, PIXEL_SLUG, Slug,
    Unreplaceable, may_replace,
};
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::identifiers::Platform;
use lambda_http::{Body, Request, Response};

use crate::auth::{Caller, acting_owner, guards_ownership};
use crate::error::ApiError;
use crate::input::json_body;
use crate::views::{
    DestinationArchivedView, DestinationSetView, DestinationsView, destination_view,
    pixel_destination_view,
};
use crate::{Api, json};

use input::{DestinationBody, account_of, check_credentials, credentials_of, refuse_foreign};

/// The path's slug; `meta` is the pixel's.
fn slug_of(slug: &str) -> Result<Slug, ApiError> {
    let slug = Slug::parse("slug", slug)?;
    if slug.as_str() == PIXEL_SLUG {
        return Err(ApiError::invalid(
            "slug: meta is the site's pixel; set it with PUT /v1/sites/{siteId}/pixel",
        ));
    }
    Ok(slug)
}

fn unreplaceable(why: Unreplaceable) -> ApiError {
    let message = match why {
        Unreplaceable::OtherPlatform(p) => format!(
            "platform: the slug is a {} destination; a slug keeps its platform (archive it and use a new slug)",
            p.as_str()
        ),
        Unreplaceable::Archived => {
            "slug: the destination is archived; register under a new slug".to_owned()
        }
        Unreplaceable::OtherOwner => {
            "slug: another owner registered this destination; only it may replace it".to_owned()
        }
    };
    ApiError::new(ErrorCode::Conflict, message)
}

/// A new destination must leave the site within its live destinations,
/// and within the destinations it keeps, archived ones included.
async fn room_for_one_more(api: &Api, site: &str) -> Result<(), ApiError> {
    let kept = api.store.destinations().list_destinations(site).await?;
    let live = kept.iter().filter(|d| d.archived_at.is_none()).count();
    if live >= MAX_LIVE_DESTINATIONS {
        return Err(ApiError::new(
            ErrorCode::LimitExceeded,
            format!("slug: a site has at most {MAX_LIVE_DESTINATIONS} live destinations"),
        ));
    }
    if kept.len() >= MAX_DESTINATIONS {
        return Err(ApiError::new(
            ErrorCode::LimitExceeded,
            format!(
                "slug: a site keeps at most {MAX_DESTINATIONS} destinations, archived ones included"
            ),
        ));
    }
    Ok(())
}

/// The credentials a registration stores: new ones checked with the
/// platform and sealed (a fresh version, the destination going again), or
/// the stored destination's as they were.
async fn credentials_to_store(
    api: &Api,
    site: &SiteId,
    slug: &Slug,
    account: &Account,
    credentials: Option<&Credentials>,
    stored: Option<&Destination>,
) -> Result<(Vec<u8>, String, bool, Option<String>), ApiError> {
    match (credentials, stored) {
        (Some(c), _) => {
            check_credentials(api, account, c).await?;
            let sealed = api
                .store
                .sealer()
                .seal_destination(site.as_str(), slug.as_str(), &c.to_sealed_text())
                .await?;
            Ok((sealed, uuid::Uuid::new_v4().to_string(), false, None))
        }
        (None, Some(d)) => Ok((
            d.sealed_credentials.clone(),
            d.credential_version.clone(),
            d.stopped,
            d.last_error.clone(),
        )),
        (None, None) => Err(ApiError::invalid(
            "credentials: are required for a new destination",
        )),
    }
}

/// A registration's identity and times: created once, and updated
/// strictly after the version read, so the write's condition tells this
/// registration from the one it replaces.
fn registered(
    site: &SiteId,
    slug: &Slug,
    account: Account,
    stored: Option<&Destination>,
    now: i64,
) -> Destination {
    Destination {
        site_id: site.to_string(),
        slug: slug.to_string(),
        account,
        enabled: true,
        set_by: None,
        sealed_credentials: vec![],
        credential_version: String::new(),
        stopped: false,
        last_error: None,
        created_at: stored.map_or(now, |d| d.created_at),
        updated_at: stored.map_or(now, |d| now.max(d.updated_at + 1)),
        archived_at: None,
    }
}

pub(crate) async fn put_destination(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let slug = slug_of(slug)?;
    let body: DestinationBody = json_body(req)?;
    caller.may_configure(site.as_str())?;
    let platform = Platform::parse(&body.platform).ok_or_else(|| {
        ApiError::invalid("platform: must be one of meta, google, tiktok, pinterest, snap")
    })?;
    refuse_foreign(&crate::input::body_keys(req), platform)?;
    let account = account_of(&body, platform)?;
    let credentials = body
        .credentials
        .as_ref()
        .map(|c| credentials_of(c, platform))
        .transpose()?;
    let setter = acting_owner(caller, body.owner_key.as_ref())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let destinations = api.store.destinations();
    let stored = destinations
        .get_destination(site.as_str(), slug.as_str())
        .await?;
    match &stored {
        Some(d) => may_replace(
            d,
            platform,
            setter.as_deref(),
            guards_ownership(caller, body.only_own),
        )
        .map_err(unreplaceable)?,
        None => room_for_one_more(api, site.as_str()).await?,
    }
    let now = api.clock.now_ms();
    let (sealed_credentials, credential_version, stopped, last_error) = credentials_to_store(
        api,
        &site,
        &slug,
        &account,
        credentials.as_ref(),
        stored.as_ref(),
    )
    .await?;
    let destination = Destination {
        enabled: body
            .enabled
            .or(stored.as_ref().map(|d| d.enabled))
            .unwrap_or(true),
        // As for the pixel: whoever registers it owns it (a host, no one).
        set_by: setter,
        sealed_credentials,
        credential_version,
        stopped,
        last_error,
        ..registered(&site, &slug, account, stored.as_ref(), now)
    };
    let read_at = stored.as_ref().map(|d| d.updated_at);
    if !destinations.put_destination(&destination, read_at).await? {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "slug: the destination changed while this registration was made; send it again",
        ));
    }
    let status = if stored.is_some() { 200 } else { 201 };
    json(
        status,
        &DestinationSetView {
            site_id: site.as_str(),
            destination: destination_view(&destination),
        },
    )
}

pub(crate) async fn list_destinations(
    api: &Api,
    caller: &Caller,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    caller.may_read(site.as_str())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let (pixels, destinations) = (api.store.pixels(), api.store.destinations());
    let (pixel, stored) = futures::try_join!(
        pixels.get_pixel(site.as_str()),
        destinations.list_destinations(site.as_str()),
    )?;
    let views: Vec<_> = pixel
        .as_ref()
        .map(pixel_destination_view)
        .into_iter()
        .chain(stored.iter().map(destination_view))
        .collect();
    json(
        200,
        &DestinationsView {
            site_id: site.as_str(),
            destinations: views,
        },
    )
}

pub(crate) async fn get_destination(
    api: &Api,
    caller: &Caller,
    site: &str,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let slug = Slug::parse("slug", slug)?;
    caller.may_read(site.as_str())?;
    let (pixel, stored) = if slug.as_str() == PIXEL_SLUG {
        (api.store.pixels().get_pixel(site.as_str()).await?, None)
    } else {
        let d = api.store.destinations();
        (None, d.get_destination(site.as_str(), slug.as_str()).await?)
    };
    let view = match (&pixel, &stored) {
        (Some(p), _) => pixel_destination_view(p),
        (None, Some(d)) => destination_view(d),
        (None, None) => {
            return Err(ApiError::not_found(
                "slug: the site has no such destination",
            ));
        }
    };
    json(
        200,
        &DestinationSetView {
            site_id: site.as_str(),
            destination: view,
        },
    )
}

pub(crate) async fn delete_destination(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let slug = slug_of(slug)?;
    let params = crate::input::query(req, &["ownerKey"])?;
    caller.may_configure(site.as_str())?;
    let acting = acting_owner(caller, params.get("ownerKey"))?;
    let destinations = api.store.destinations();
    let Some(stored) = destinations
        .get_destination(site.as_str(), slug.as_str())
        .await?
        .filter(|d| d.archived_at.is_none())
    else {
        return Err(ApiError::not_found(
            "slug: the site has no live destination under this slug",
        ));
    };
    if acting.is_some() && stored.set_by != acting {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "slug: another owner registered this destination; only it may archive it",
        ));
    }
    let now = api.clock.now_ms();
    if !destinations
        .archive_destination(site.as_str(), slug.as_str(), now)
        .await?
    {
        return Err(ApiError::not_found(
            "slug: the site has no live destination under this slug",
        ));
    }
    json(
        200,
        &DestinationArchivedView {
            site_id: site.as_str(),
            slug: slug.as_str(),
            archived: true,
        },
    )
}
