//! A destination's registration as the API reads it: the body, the
//! fields each platform takes (one another platform takes is named, not
//! ignored), each id checked by its platform's shape, the credentials, and
//! the check each platform offers before anything is stored.

use std::collections::BTreeMap;

use adtrail_domain::capi::EventName;
use adtrail_domain::capi::platforms::Refusal;
use adtrail_domain::destinations::{
    Account, Credentials, GoogleInput, alphanumeric_id, google_customer_id, snap_pixel_id,
    test_event_code,
};
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::identifiers::Platform;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_platforms::google::Grant;
use adtrail_platforms::google_jwt;
use serde::Deserialize;

use crate::Api;
use crate::error::ApiError;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct CredentialsBody {
    pub(super) access_token: Option<String>,
    pub(super) client_id: Option<String>,
    pub(super) client_secret: Option<String>,
    pub(super) refresh_token: Option<String>,
    pub(super) client_email: Option<String>,
    pub(super) private_key: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct DestinationBody {
    pub(super) platform: String,
    pub(super) pixel_id: Option<String>,
    pub(super) pixel_code: Option<String>,
    pub(super) ad_account_id: Option<String>,
    pub(super) operating_account: Option<String>,
    pub(super) login_account: Option<String>,
    pub(super) conversion_actions: Option<BTreeMap<String, String>>,
    pub(super) test_event_code: Option<String>,
    pub(super) test_mode: Option<bool>,
    pub(super) enabled: Option<bool>,
    pub(super) credentials: Option<CredentialsBody>,
    pub(super) owner_key: Option<String>,
    #[serde(default)]
    pub(super) only_own: bool,
}

/// The fields each platform's registration takes besides the common ones.
pub(super) fn platform_fields(platform: Platform) -> &'static [&'static str] {
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
pub(super) fn refuse_foreign(keys: &[String], platform: Platform) -> Result<(), ApiError> {
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

pub(super) fn required<'a>(value: Option<&'a String>, field: &str) -> Result<&'a str, ApiError> {
    value
        .map(String::as_str)
        .ok_or_else(|| ApiError::invalid(format!("{field}: is required for this platform")))
}

/// The platform's ids and test mode, each checked by its own shape.
pub(super) fn account_of(b: &DestinationBody, platform: Platform) -> Result<Account, ApiError> {
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

pub(super) fn credentials_of(
    c: &CredentialsBody,
    platform: Platform,
) -> Result<Credentials, adtrail_domain::IdError> {
    let google = GoogleInput {
        client_id: c.client_id.as_deref(),
        client_secret: c.client_secret.as_deref(),
        refresh_token: c.refresh_token.as_deref(),
        client_email: c.client_email.as_deref(),
        private_key: c.private_key.as_deref(),
    };
    Credentials::for_platform(platform, c.access_token.as_deref(), google)
}

/// Where the platform offers a check of the credentials, they are checked
/// before anything is stored: Meta must show the pixel to the token, and
/// Google must trade the refresh token, or the service account's signed
/// assertion, for an access token. TikTok,
/// Pinterest and Snap offer no check that sends nothing; a refusal there
/// shows at the first send, and stops the destination.
pub(super) async fn check_credentials(
    api: &Api,
    account: &Account,
    credentials: &Credentials,
) -> Result<(), ApiError> {
    if let Some(grant) = Grant::of(credentials) {
        if let Grant::ServiceAccount { private_key, .. } = grant
            && let Err(e) = google_jwt::key_pair(private_key)
        {
            return Err(ApiError::invalid(format!("credentials.privateKey: {e}")));
        }
        // A fresh key: the check never reuses a cached token.
        let key = format!("check/{}", uuid::Uuid::new_v4());
        let now = api.clock.now_ms();
        let result = api.platforms.google_access_token(&key, &grant, now).await;
        api.platforms.forget_google_token(&key);
        return match result {
            Ok(_) => Ok(()),
            Err((Refusal::TokenInvalid, _)) => Err(ApiError::new(
                ErrorCode::PlatformCredentialsRefused,
                "credentials: Google refused the client, the refresh token or the service account",
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
