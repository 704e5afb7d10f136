//! A site's Meta pixel: which dataset its conversions go to, and with whose
//! token — the connection's (`source: connection`) or its own, sealed with
//! KMS (`source: token`).

use adtrail_domain::pixels::SitePixel;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{FromItem, Item, get_s, n, s};
use crate::items::{PixelItem, decode, encode};
use crate::keys::{owner_pk, site_pk};
use crate::write::applied;
use crate::{Pixels, StoreError};

const PIXEL_SK: &str = "pixel";
const PIXEL_GSI_PREFIX: &str = "pixel#";

impl FromItem for SitePixel {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<PixelItem>(item, "pixel")?.try_into()
    }
}

/// The pixel's item. The `owner` index lists the pixels an owner set, to
/// forget them with it.
fn pixel_item(pixel: &SitePixel) -> Result<Item, StoreError> {
    let gsi = pixel.owner().map(|owner| {
        (
            owner_pk(owner),
            format!("{PIXEL_GSI_PREFIX}{}", pixel.site_id),
        )
    });
    let item = PixelItem::of(pixel, site_pk(&pixel.site_id), PIXEL_SK.to_owned(), gsi);
    encode(&item, "pixel")
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
            .set_item(Some(pixel_item(pixel)?))
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
            .update_item(site_pk(site), PIXEL_SK)
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
            .update_item(site_pk(site), PIXEL_SK)
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
            .update_item(site_pk(site), PIXEL_SK)
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
