//! `/v1/sites/{siteId}/destinations[/{slug}]`: the platform accounts a
//! site's conversions go to. A registration names the platform, its ids,
//! its test mode and credentials (sealed with KMS under the site and slug,
//! never answered); a slug keeps its platform and an archived slug stays
//! archived. The site's Meta pixel is listed as the destination `meta` and
//! keeps its own routes.

use std::collections::BTreeMap;

use adtrail_domain::SiteId;
use adtrail_domain::capi::EventName;
use adtrail_domain::capi::platforms::Refusal;
use adtrail_domain::destinations::{
    Account, Credentials, Destination, MAX_LIVE_DESTINATIONS, PIXEL_SLUG, Slug, Unreplaceable,
    alphanumeric_id, google_customer_id, may_replace, snap_pixel_id, test_event_code,
};
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::identifiers::Platform;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_store::conversions::Flow;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::{Caller, acting_owner, guards_ownership};
use crate::error::ApiError;
use crate::input::json_body;
use crate::views::{destination_view, pixel_destination_view};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CredentialsBody {
    access_token: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    refresh_token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DestinationBody {
    platform: String,
    pixel_id: Option<String>,
    pixel_code: Option<String>,
    ad_account_id: Option<String>,
    operating_account: Option<String>,
    login_account: Option<String>,
    conversion_actions: Option<BTreeMap<String, String>>,
    test_event_code: Option<String>,
    test_mode: Option<bool>,
    enabled: Option<bool>,
    credentials: Option<CredentialsBody>,
    owner_key: Option<String>,
    #[serde(default)]
    only_own: bool,
}

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

/// The fields each platform's registration takes besides the common ones.
fn platform_fields(platform: Platform) -> &'static [&'static str] {
    match platform {
        Platform::Meta => &["pixelId", "testEventCode"],
        Platform::Google => &[
            "operatingAccount",
            "loginAccount",
            "conversionActions",
            "testMode",
        ],
        Platform::TikTok => &["pixelCode", "testEventCode"],
        Platform::Pinterest => &["adAccountId", "testMode"],
        Platform::Snap => &["pixelId", "testMode"],
    }
}

/// A field the platform does not take is named, not ignored (even as
/// `null`): a typo must not pass for a setting.
fn refuse_foreign(keys: &[String], platform: Platform) -> Result<(), ApiError> {
    const COMMON: [&str; 5] = ["platform", "enabled", "credentials", "ownerKey", "onlyOwn"];
    let takes = platform_fields(platform);
    match keys
        .iter()
        .find(|k| !COMMON.contains(&k.as_str()) && !takes.contains(&k.as_str()))
    {
        Some(field) => Err(ApiError::invalid(format!(
            "{field}: {} destinations do not take it",
            platform.as_str()
        ))),
        None => Ok(()),
    }
}

fn required<'a>(value: Option<&'a String>, field: &str) -> Result<&'a str, ApiError> {
    value
        .map(String::as_str)
        .ok_or_else(|| ApiError::invalid(format!("{field}: is required for this platform")))
}

/// The platform's ids and test mode, each checked by its own shape.
fn account_of(b: &DestinationBody, platform: Platform) -> Result<Account, ApiError> {
    let code = |c: &Option<String>| -> Result<Option<String>, ApiError> {
        if let Some(c) = c {
            test_event_code("testEventCode", c)?;
        }
        Ok(c.clone())
    };
    let test = b.test_mode.unwrap_or(false);
    Ok(match platform {
        Platform::Meta => {
            let pixel_id = required(b.pixel_id.as_ref(), "pixelId")?;
            check_meta_numeric("pixelId", pixel_id)?;
            Account::Meta {
                pixel_id: pixel_id.to_owned(),
                test_event_code: code(&b.test_event_code)?,
            }
        }
        Platform::Google => {
            let operating = required(b.operating_account.as_ref(), "operatingAccount")?;
            let login = b.login_account.as_deref().unwrap_or(operating);
            let actions = b.conversion_actions.clone().unwrap_or_default();
            if actions.is_empty() || actions.len() > EventName::ALL.len() {
                return Err(ApiError::invalid(
                    "conversionActions: name a conversion action for at least one event",
                ));
            }
            let mut conversion_actions = BTreeMap::new();
            for (event, id) in actions {
                let e = EventName::parse_wire(&event).ok_or_else(|| {
                    ApiError::invalid(format!(
                        "conversionActions: {} is not an event",
                        event.chars().take(40).collect::<String>()
                    ))
                })?;
                check_meta_numeric(&format!("conversionActions.{}", e.wire()), &id)?;
                conversion_actions.insert(e, id);
            }
            Account::Google {
                operating_account: google_customer_id("operatingAccount", operating)?,
                login_account: google_customer_id("loginAccount", login)?,
                conversion_actions,
                validate_only: test,
            }
        }
        Platform::TikTok => {
            let pixel_code = required(b.pixel_code.as_ref(), "pixelCode")?;
            alphanumeric_id("pixelCode", pixel_code, 64)?;
            Account::TikTok {
                pixel_code: pixel_code.to_owned(),
                test_event_code: code(&b.test_event_code)?,
            }
        }
        Platform::Pinterest => {
            let ad_account_id = required(b.ad_account_id.as_ref(), "adAccountId")?;
            check_meta_numeric("adAccountId", ad_account_id)?;
            Account::Pinterest {
                ad_account_id: ad_account_id.to_owned(),
                test,
            }
        }
        Platform::Snap => {
            let pixel_id = required(b.pixel_id.as_ref(), "pixelId")?;
            snap_pixel_id("pixelId", pixel_id)?;
            Account::Snap {
                pixel_id: pixel_id.to_ascii_lowercase(),
                validate: test,
            }
        }
    })
}

fn credentials_of(
    c: &CredentialsBody,
    platform: Platform,
) -> Result<Credentials, adtrail_domain::IdError> {
    let google = match (&c.client_id, &c.client_secret, &c.refresh_token) {
        (None, None, None) => None,
        (id, secret, refresh) => Some((
            id.as_deref().unwrap_or_default(),
            secret.as_deref().unwrap_or_default(),
            refresh.as_deref().unwrap_or_default(),
        )),
    };
    Credentials::for_platform(platform, c.access_token.as_deref(), google)
}

/// Where the platform offers a check of the credentials, they are checked
/// before anything is stored: Meta must show the pixel to the token, and
/// Google must trade the refresh token for an access token. TikTok,
/// Pinterest and Snap offer no check that sends nothing; a refusal there
/// shows at the first send, and stops the destination.
async fn check_credentials(
    api: &Api,
    account: &Account,
    credentials: &Credentials,
) -> Result<(), ApiError> {
    if let Credentials::GoogleOAuth {
        client_id,
        client_secret,
        refresh_token,
    } = credentials
    {
        let oauth = adtrail_platforms::google::OAuthClient {
            client_id,
            client_secret,
            refresh_token,
        };
        // A fresh key: the check never reuses a cached token.
        let key = format!("check/{}", uuid::Uuid::new_v4());
        let now = api.clock.now_ms();
        let result = api.platforms.google_access_token(&key, &oauth, now).await;
        api.platforms.forget_google_token(&key);
        return match result {
            Ok(_) => Ok(()),
            Err((Refusal::TokenInvalid, _)) => Err(ApiError::new(
                ErrorCode::PlatformCredentialsRefused,
                "credentials: Google refused the client or the refresh token",
            )),
            Err(_) => Err(ApiError::new(
                ErrorCode::PlatformUnavailable,
                "credentials: Google's token endpoint could not be reached; nothing was stored",
            )),
        };
    }
    if let (Account::Meta { pixel_id, .. }, Credentials::Token(token)) = (account, credentials) {
        match api.graph.pixel(token, pixel_id).await {
            Ok(_) => {}
            Err(e) if e.kind == GraphErrorKind::Other && e.code == Some(100) => {
                return Err(ApiError::not_found(
                    "pixelId: the access token does not reach this pixel",
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
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
    if let Some(d) = &stored {
        may_replace(
            d,
            platform,
            setter.as_deref(),
            guards_ownership(caller, body.only_own),
        )
        .map_err(unreplaceable)?;
    } else {
        let live = destinations
            .list_destinations(site.as_str())
            .await?
            .iter()
            .filter(|d| d.archived_at.is_none())
            .count();
        if live >= MAX_LIVE_DESTINATIONS {
            return Err(ApiError::new(
                ErrorCode::LimitExceeded,
                format!("slug: a site has at most {MAX_LIVE_DESTINATIONS} live destinations"),
            ));
        }
    }
    let now = api.clock.now_ms();
    let (sealed_credentials, credential_version, stopped, last_error) =
        match (&credentials, &stored) {
            (Some(c), _) => {
                check_credentials(api, &account, c).await?;
                let sealed = api
                    .store
                    .sealer()
                    .seal_destination(site.as_str(), slug.as_str(), &c.to_sealed_text())
                    .await?;
                (sealed, uuid::Uuid::new_v4().to_string(), false, None)
            }
            (None, Some(d)) => (
                d.sealed_credentials.clone(),
                d.credential_version.clone(),
                d.stopped,
                d.last_error.clone(),
            ),
            (None, None) => {
                return Err(ApiError::invalid(
                    "credentials: are required for a new destination",
                ));
            }
        };
    let destination = Destination {
        site_id: site.to_string(),
        slug: slug.to_string(),
        account,
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
        created_at: stored.as_ref().map_or(now, |d| d.created_at),
        // Strictly after the version read: the write's condition tells
        // this registration from the one it replaces.
        updated_at: stored.as_ref().map_or(now, |d| now.max(d.updated_at + 1)),
        archived_at: None,
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
        &json!({"siteId": site.as_str(), "destination": destination_view(&destination)}),
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
        &json!({"siteId": site.as_str(), "destinations": views}),
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
    json(200, &json!({"siteId": site.as_str(), "destination": view}))
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
        &json!({"siteId": site.as_str(), "slug": slug.as_str(), "archived": true}),
    )
}

pub(crate) async fn destination_metrics(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    slug: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let slug = Slug::parse("slug", slug)?;
    let params = crate::input::query(req, &["from", "to"])?;
    let (from, to) = crate::input::day_range(&params, 366)?;
    caller.may_read(site.as_str())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let metrics = api
        .store
        .conversions()
        .destination_metrics(site.as_str(), slug.as_str(), from, to)
        .await?;
    let flow = |f: Flow| json!({"queued": f.queued, "sent": f.sent, "failed": f.failed});
    let add = |a: &mut Flow, b: &Flow| {
        a.queued += b.queued;
        a.sent += b.sent;
        a.failed += b.failed;
    };
    let mut totals = Flow::default();
    let mut by_event: BTreeMap<EventName, Flow> = BTreeMap::new();
    let mut days = vec![];
    for (day, events) in &metrics {
        let mut on_day = Flow::default();
        for (event, f) in events {
            add(&mut on_day, f);
            add(by_event.entry(*event).or_default(), f);
        }
        add(&mut totals, &on_day);
        let mut row = flow(on_day);
        row["dayStart"] = json!(day);
        days.push(row);
    }
    let by_event: serde_json::Map<String, Value> = by_event
        .into_iter()
        .map(|(e, f)| (e.wire().to_owned(), flow(f)))
        .collect();
    json(
        200,
        &json!({"siteId": site.as_str(), "slug": slug.as_str(), "from": from, "to": to,
                "totals": flow(totals), "byEvent": by_event, "days": days}),
    )
}
