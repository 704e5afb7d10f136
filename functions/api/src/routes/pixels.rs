//! `PUT|DELETE /v1/sites/{siteId}/pixel`: the Meta pixel a site's
//! conversions go to, sending with a connection's token (`ownerKey`, the
//! pixel must be in that connection's listing) or a token of its own
//! (`accessToken`, checked against the pixel and sealed with KMS).

use adtrail_domain::SiteId;
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::pixels::{PixelSource, SitePixel};
use adtrail_store::seal::Purpose;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::{Caller, acting_owner, resolve_owner};
use crate::error::ApiError;
use crate::input::{check_token, json_body};
use crate::views::{PixelSetView, RemovedView, pixel_view};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PixelBody {
    pixel_id: String,
    owner_key: Option<String>,
    access_token: Option<String>,
    enabled: Option<bool>,
    send_lead_event: Option<bool>,
    test_event_code: Option<String>,
    /// A host asks to be refused, as a dashboard is, a pixel another owner
    /// set.
    #[serde(default)]
    only_own: bool,
}

pub(crate) async fn put_pixel(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let body: PixelBody = json_body(req)?;
    caller.may_configure(site.as_str())?;
    check_meta_numeric("pixelId", &body.pixel_id)?;
    if let Some(code) = &body.test_event_code
        && (code.is_empty() || code.len() > 64 || !code.bytes().all(|b| b.is_ascii_alphanumeric()))
    {
        return Err(ApiError::invalid(
            "testEventCode: must be 1 to 64 letters and digits",
        ));
    }
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let now = api.clock.now_ms();
    let (source, name) = match (body.owner_key.as_deref(), body.access_token.as_deref()) {
        (Some(owner), None) => shared_source(api, caller, owner, &body.pixel_id).await?,
        (None, Some(token)) => own_source(api, caller, &site, token, &body.pixel_id).await?,
        _ => {
            return Err(ApiError::invalid(
                "ownerKey: give exactly one of ownerKey and accessToken",
            ));
        }
    };
    let previous = api.store.pixels().get_pixel(site.as_str()).await?;
    let setter = match &source {
        PixelSource::Connection { owner_key } => Some(owner_key.as_str()),
        PixelSource::Token { set_by, .. } => set_by.as_deref(),
    };
    if let Some(p) = &previous
        && p.owner() != setter
        && crate::auth::guards_ownership(caller, body.only_own)
    {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "pixelId: another owner set the site's pixel; only it may replace it",
        ));
    }
    let pixel = SitePixel {
        site_id: site.to_string(),
        pixel_id: body.pixel_id,
        name,
        source,
        enabled: body.enabled.unwrap_or(true),
        send_lead_event: body
            .send_lead_event
            .or(previous.as_ref().map(|p| p.send_lead_event))
            .unwrap_or(false),
        test_event_code: body.test_event_code,
        last_error: None,
        stopped: false,
        not_granted: false,
        updated_at: now,
    };
    api.store.pixels().put_pixel(&pixel).await?;
    json(
        200,
        &PixelSetView {
            site_id: site.as_str(),
            pixel: pixel_view(Some(&pixel)),
        },
    )
}

/// A pixel that sends with `owner`'s connection token: the token must list
/// it. Answers the source and the pixel's name.
async fn shared_source(
    api: &Api,
    caller: &Caller,
    owner: &str,
    pixel_id: &str,
) -> Result<(PixelSource, String), ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    let Some(connection) = api.store.connections().get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let Some(listed) = connection.pixels.iter().find(|p| p.pixel_id == pixel_id) else {
        return Err(ApiError::not_found(
            "pixelId: the connection's token does not list this pixel",
        ));
    };
    let name = listed.name.clone();
    Ok((PixelSource::Connection { owner_key: owner }, name))
}

/// A pixel with a token of its own: Meta must show the pixel to it; the
/// token is sealed for this site. Answers the source and the pixel's name.
async fn own_source(
    api: &Api,
    caller: &Caller,
    site: &SiteId,
    token: &str,
    pixel_id: &str,
) -> Result<(PixelSource, String), ApiError> {
    check_token(token).map_err(|_| {
        ApiError::invalid("accessToken: must be 1 to 4096 printable characters without spaces")
    })?;
    let pixel = match api.graph.pixel(token, pixel_id).await {
        Ok(p) => p,
        Err(e) if e.kind == GraphErrorKind::Other && e.code == Some(100) => {
            return Err(ApiError::not_found(
                "pixelId: the access token does not reach this pixel",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let set_by = if caller.is_host() {
        None
    } else {
        Some(caller.owner("me", true)?)
    };
    let sealed_token = api
        .store
        .sealer()
        .seal(&format!("pixel:{site}"), Purpose::PixelToken, token)
        .await?;
    let source = PixelSource::Token {
        sealed_token,
        token_version: uuid::Uuid::new_v4().to_string(),
        set_by,
    };
    Ok((source, pixel.name))
}

pub(crate) async fn delete_pixel(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = crate::input::query(req, &["ownerKey"])?;
    caller.may_configure(site.as_str())?;
    let acting = acting_owner(caller, params.get("ownerKey"))?;
    if let (Some(owner), Some(p)) = (&acting, api.store.pixels().get_pixel(site.as_str()).await?)
        && p.owner() != Some(owner.as_str())
    {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "siteId: another owner set the site's pixel; only it may remove it",
        ));
    }
    if !api.store.pixels().delete_pixel(site.as_str()).await? {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "siteId: the site has no pixel",
        ));
    }
    json(
        200,
        &RemovedView {
            site_id: site.as_str(),
            removed: true,
        },
    )
}
