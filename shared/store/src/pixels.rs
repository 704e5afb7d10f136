//! A site's Meta pixel: which dataset its conversions go to, and with whose
//! token — the connection's (`source: connection`) or its own, sealed with
//! KMS (`source: token`).

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{Item, get_bool, get_n, get_s, n, need_s, s};
use crate::keys::{GSI1_PK, GSI1_SK, PK, SK, owner_pk, site_pk};
use crate::write::applied;
use crate::{Aws, StoreError};

const PIXEL_SK: &str = "pixel";
const PIXEL_GSI_PREFIX: &str = "pixel#";

/// Where a pixel's token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PixelSource {
    /// The owner's connection token.
    Connection { owner_key: String },
    /// A token of its own, sealed; `set_by` is the owner who set it, if any.
    Token {
        sealed_token: Vec<u8>,
        token_version: String,
        set_by: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePixel {
    pub site_id: String,
    pub pixel_id: String,
    pub name: String,
    pub source: PixelSource,
    pub enabled: bool,
    pub send_lead_event: bool,
    pub test_event_code: Option<String>,
    pub last_error: Option<String>,
    /// Meta refused the pixel's own token: nothing is queued or sent until
    /// a token is stored again.
    pub stopped: bool,
    /// The connection's token no longer lists the pixel
    /// (`PIXEL_NOT_GRANTED`): nothing is queued or sent until it does.
    pub not_granted: bool,
    pub updated_at: i64,
}

impl SitePixel {
    pub fn source_name(&self) -> &'static str {
        match self.source {
            PixelSource::Connection { .. } => "connection",
            PixelSource::Token { .. } => "token",
        }
    }

    /// The owner who set the pixel (`None`: the host, with a token of its own).
    pub fn owner(&self) -> Option<&str> {
        match &self.source {
            PixelSource::Connection { owner_key } => Some(owner_key),
            PixelSource::Token { set_by, .. } => set_by.as_deref(),
        }
    }

    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let source = match get_s(item, "source") {
            Some("token") => PixelSource::Token {
                sealed_token: item
                    .get("sealedToken")
                    .and_then(|v| v.as_b().ok())
                    .map(|b| b.as_ref().to_vec())
                    .unwrap_or_default(),
                token_version: get_s(item, "tokenVersion").unwrap_or_default().to_owned(),
                set_by: get_s(item, "setBy").map(str::to_owned),
            },
            _ => PixelSource::Connection {
                owner_key: need_s(item, "ownerKey")?,
            },
        };
        Ok(Self {
            site_id: need_s(item, "siteId")?,
            pixel_id: need_s(item, "pixelId")?,
            name: get_s(item, "name").unwrap_or_default().to_owned(),
            source,
            enabled: get_bool(item, "enabled"),
            send_lead_event: get_bool(item, "sendLeadEvent"),
            test_event_code: get_s(item, "testEventCode").map(str::to_owned),
            last_error: get_s(item, "lastError").map(str::to_owned),
            stopped: get_bool(item, "stopped"),
            not_granted: get_bool(item, "notGranted"),
            updated_at: get_n(item, "updatedAt").unwrap_or(0),
        })
    }

    fn to_item(&self) -> Item {
        let mut item: Item = [
            (PK.to_owned(), s(site_pk(&self.site_id))),
            (SK.to_owned(), s(PIXEL_SK)),
            ("siteId".to_owned(), s(&self.site_id)),
            ("pixelId".to_owned(), s(&self.pixel_id)),
            ("name".to_owned(), s(&self.name)),
            ("source".to_owned(), s(self.source_name())),
            ("enabled".to_owned(), AttributeValue::Bool(self.enabled)),
            (
                "sendLeadEvent".to_owned(),
                AttributeValue::Bool(self.send_lead_event),
            ),
            ("updatedAt".to_owned(), n(self.updated_at)),
            ("stopped".to_owned(), AttributeValue::Bool(self.stopped)),
            (
                "notGranted".to_owned(),
                AttributeValue::Bool(self.not_granted),
            ),
        ]
        .into_iter()
        .collect();
        match &self.source {
            PixelSource::Connection { owner_key } => {
                item.insert("ownerKey".into(), s(owner_key));
            }
            PixelSource::Token {
                sealed_token,
                token_version,
                set_by,
            } => {
                item.insert(
                    "sealedToken".into(),
                    AttributeValue::B(Blob::new(sealed_token.clone())),
                );
                item.insert("tokenVersion".into(), s(token_version));
                if let Some(owner) = set_by {
                    item.insert("setBy".into(), s(owner));
                }
            }
        }
        if let Some(code) = &self.test_event_code {
            item.insert("testEventCode".into(), s(code));
        }
        // The `owner` index lists the pixels an owner set, to forget them
        // with it.
        if let Some(owner) = self.owner() {
            item.insert(GSI1_PK.into(), s(owner_pk(owner)));
            item.insert(
                GSI1_SK.into(),
                s(format!("{PIXEL_GSI_PREFIX}{}", self.site_id)),
            );
        }
        if let Some(e) = &self.last_error {
            item.insert("lastError".into(), s(e));
        }
        item
    }
}

impl Aws {
    /// Stores a site's pixel, replacing the one before.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_pixel(&self, pixel: &SitePixel) -> Result<(), StoreError> {
        self.ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(pixel.to_item()))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(())
    }

    /// The site's pixel, if one is set.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_pixel(&self, site: &str) -> Result<Option<SitePixel>, StoreError> {
        let item = self.read_item(site_pk(site), PIXEL_SK).await?;
        item.as_ref().map(SitePixel::from_item).transpose()
    }

    /// The sites whose pixel `owner` set, through the `owner` index.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn owner_pixels(&self, owner: &str) -> Result<Vec<String>, StoreError> {
        // Bounded: an owner sets at most one pixel a site.
        Ok(self
            .owner_index(owner, PIXEL_GSI_PREFIX, 50)
            .await?
            .iter()
            .filter_map(|i| get_s(i, "siteId").map(str::to_owned))
            .collect())
    }

    /// Stops a pixel whose own token Meta refused, only if that token is
    /// still the stored one. Answers whether it stopped it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn stop_pixel(
        &self,
        site: &str,
        token_version: &str,
        last_error: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .key(PK, s(site_pk(site)))
            .key(SK, s(PIXEL_SK))
            .update_expression("SET stopped = :t, lastError = :e, updatedAt = :now")
            .condition_expression("tokenVersion = :v")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":e", s(last_error))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":v", s(token_version))
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }

    /// Records whether the connection of `owner` still lists the site's
    /// pixel (only a pixel that connection set).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn set_pixel_grant(
        &self,
        site: &str,
        owner: &str,
        granted: bool,
        last_error: Option<&str>,
    ) -> Result<(), StoreError> {
        let update = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .key(PK, s(site_pk(site)))
            .key(SK, s(PIXEL_SK))
            .condition_expression("#source = :connection AND ownerKey = :owner")
            .expression_attribute_names("#source", "source")
            .expression_attribute_values(":connection", s("connection"))
            .expression_attribute_values(":owner", s(owner))
            .expression_attribute_values(":granted", AttributeValue::Bool(!granted));
        let update = match last_error {
            Some(e) => update
                .update_expression("SET notGranted = :granted, lastError = :e")
                .expression_attribute_values(":e", s(e)),
            None => update.update_expression("SET notGranted = :granted REMOVE lastError"),
        };
        applied(update.send().await)?;
        Ok(())
    }

    /// Sets whether a new lead sends `Lead`, on the site's pixel if it has
    /// one.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn set_pixel_send_lead_event(&self, site: &str, on: bool) -> Result<(), StoreError> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .key(PK, s(site_pk(site)))
            .key(SK, s(PIXEL_SK))
            .update_expression("SET sendLeadEvent = :on")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":on", AttributeValue::Bool(on))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }

    /// Forgets the site's pixel. Answers whether there was one.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn delete_pixel(&self, site: &str) -> Result<bool, StoreError> {
        self.delete_existing(site_pk(site), PIXEL_SK).await
    }
}
