//! A site's Meta pixel: which dataset its conversions go to, and with whose
//! token — the connection's (`source: connection`) or its own, sealed with
//! KMS (`source: token`).

use adtrail_domain::pixels::{PixelSource, SitePixel};
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{FromItem, Item, get_bool, get_n, get_s, n, need_s, s};
use crate::keys::{GSI1_PK, GSI1_SK, PK, SK, owner_pk, site_pk};
use crate::write::applied;
use crate::{Pixels, StoreError};

const PIXEL_SK: &str = "pixel";
const PIXEL_GSI_PREFIX: &str = "pixel#";

impl FromItem for SitePixel {
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
}

fn pixel_item(pixel: &SitePixel) -> Item {
    let mut item: Item = [
        (PK.to_owned(), s(site_pk(&pixel.site_id))),
        (SK.to_owned(), s(PIXEL_SK)),
        ("siteId".to_owned(), s(&pixel.site_id)),
        ("pixelId".to_owned(), s(&pixel.pixel_id)),
        ("name".to_owned(), s(&pixel.name)),
        ("source".to_owned(), s(pixel.source_name())),
        ("enabled".to_owned(), AttributeValue::Bool(pixel.enabled)),
        (
            "sendLeadEvent".to_owned(),
            AttributeValue::Bool(pixel.send_lead_event),
        ),
        ("updatedAt".to_owned(), n(pixel.updated_at)),
        ("stopped".to_owned(), AttributeValue::Bool(pixel.stopped)),
        (
            "notGranted".to_owned(),
            AttributeValue::Bool(pixel.not_granted),
        ),
    ]
    .into_iter()
    .collect();
    match &pixel.source {
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
    if let Some(code) = &pixel.test_event_code {
        item.insert("testEventCode".into(), s(code));
    }
    // The `owner` index lists the pixels an owner set, to forget them
    // with it.
    if let Some(owner) = pixel.owner() {
        item.insert(GSI1_PK.into(), s(owner_pk(owner)));
        item.insert(
            GSI1_SK.into(),
            s(format!("{PIXEL_GSI_PREFIX}{}", pixel.site_id)),
        );
    }
    if let Some(e) = &pixel.last_error {
        item.insert("lastError".into(), s(e));
    }
    item
}

impl Pixels<'_> {
    /// Stores a site's pixel, replacing the one before.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_pixel(&self, pixel: &SitePixel) -> Result<(), StoreError> {
        self.ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(pixel_item(pixel)))
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
            .links()
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
