//! The item of a destination: its platform's ids flat beside its state,
//! the credentials sealed.

use std::collections::BTreeMap;

use adtrail_domain::capi::EventName;
use adtrail_domain::destinations::{Account, Destination};
use adtrail_domain::identifiers::Platform;
use serde::{Deserialize, Serialize};

use super::parse;
use crate::error::StoreError;

/// `dest#<siteId>` / `<slug>`: written whole on registration, updated in
/// place on archive and stop.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    platform: String,
    /// Meta's and Snap's pixel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pixel_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pixel_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ad_account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operating_account: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    login_account: Option<String>,
    /// Event name → Google conversion action id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    conversion_actions: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    test_event_code: Option<String>,
    /// Pinterest's `test`, Snap's `validate`, Google's `validateOnly`.
    #[serde(default)]
    test_mode: bool,
    enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    set_by: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "serde_bytes")]
    sealed_credentials: Vec<u8>,
    credential_version: String,
    #[serde(default)]
    stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    created_at: i64,
    updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    archived_at: Option<i64>,
}

impl DestinationItem {
    pub(crate) fn of(d: &Destination, pk: String) -> Self {
        let mut item = DestinationItem {
            pk,
            sk: d.slug.clone(),
            site_id: d.site_id.clone(),
            platform: d.account.platform().as_str().to_owned(),
            pixel_id: None,
            pixel_code: None,
            ad_account_id: None,
            operating_account: None,
            login_account: None,
            conversion_actions: BTreeMap::new(),
            test_event_code: None,
            test_mode: false,
            enabled: d.enabled,
            set_by: d.set_by.clone(),
            sealed_credentials: d.sealed_credentials.clone(),
            credential_version: d.credential_version.clone(),
            stopped: d.stopped,
            last_error: d.last_error.clone(),
            created_at: d.created_at,
            updated_at: d.updated_at,
            archived_at: d.archived_at,
        };
        match &d.account {
            Account::Meta {
                pixel_id,
                test_event_code,
            } => {
                item.pixel_id = Some(pixel_id.clone());
                item.test_event_code = test_event_code.clone();
            }
            Account::Google {
                operating_account,
                login_account,
                conversion_actions,
                validate_only,
            } => {
                item.operating_account = Some(operating_account.clone());
                item.login_account = Some(login_account.clone());
                item.conversion_actions = conversion_actions
                    .iter()
                    .map(|(e, id)| (e.as_str().to_owned(), id.clone()))
                    .collect();
                item.test_mode = *validate_only;
            }
            Account::TikTok {
                pixel_code,
                test_event_code,
            } => {
                item.pixel_code = Some(pixel_code.clone());
                item.test_event_code = test_event_code.clone();
            }
            Account::Pinterest {
                ad_account_id,
                test,
            } => {
                item.ad_account_id = Some(ad_account_id.clone());
                item.test_mode = *test;
            }
            Account::Snap { pixel_id, validate } => {
                item.pixel_id = Some(pixel_id.clone());
                item.test_mode = *validate;
            }
        }
        item
    }
}

impl TryFrom<DestinationItem> for Destination {
    type Error = StoreError;
    fn try_from(i: DestinationItem) -> Result<Self, StoreError> {
        let platform = parse(Platform::parse(&i.platform), "destination", "platform")?;
        let need = |v: Option<String>, attribute: &str| parse(v, "destination", attribute);
        let account = match platform {
            Platform::Meta => Account::Meta {
                pixel_id: need(i.pixel_id, "pixelId")?,
                test_event_code: i.test_event_code,
            },
            Platform::Google => Account::Google {
                operating_account: need(i.operating_account, "operatingAccount")?,
                login_account: need(i.login_account, "loginAccount")?,
                conversion_actions: i
                    .conversion_actions
                    .into_iter()
                    .map(|(e, id)| {
                        Ok((
                            parse(EventName::parse(&e), "destination", "conversionActions")?,
                            id,
                        ))
                    })
                    .collect::<Result<_, StoreError>>()?,
                validate_only: i.test_mode,
            },
            Platform::TikTok => Account::TikTok {
                pixel_code: need(i.pixel_code, "pixelCode")?,
                test_event_code: i.test_event_code,
            },
            Platform::Pinterest => Account::Pinterest {
                ad_account_id: need(i.ad_account_id, "adAccountId")?,
                test: i.test_mode,
            },
            Platform::Snap => Account::Snap {
                pixel_id: need(i.pixel_id, "pixelId")?,
                validate: i.test_mode,
            },
        };
        Ok(Destination {
            site_id: i.site_id,
            slug: i.sk,
            account,
            enabled: i.enabled,
            set_by: i.set_by,
            sealed_credentials: i.sealed_credentials,
            credential_version: i.credential_version,
            stopped: i.stopped,
            last_error: i.last_error,
            created_at: i.created_at,
            updated_at: i.updated_at,
            archived_at: i.archived_at,
        })
    }
}
