//! A site's destinations: registered whole (a new slug only if it is new,
//! a stored one only over the version it was read at), listed with one
//! query, archived in place (the credentials erased, the row kept for its
//! history), and stopped when the platform refuses the credentials still
//! stored.

use adtrail_domain::destinations::{Destination, MAX_DESTINATIONS};
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{FromItem, Item, n, s};
use crate::items::{DestinationItem, decode, encode};
use crate::keys::dest_pk;
use crate::write::applied;
use crate::{Destinations, StoreError};

/// Destinations a site's listing reads at most (live and archived): well
/// above the [`MAX_DESTINATIONS`] a site keeps, which two registrations
/// at once may pass by one each.
const MAX_LISTED: usize = 5 * MAX_DESTINATIONS;

impl FromItem for Destination {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<DestinationItem>(item, "destination")?.try_into()
    }
}

impl Destinations<'_> {
    /// Stores `d` over the row the caller read (`read_at`: its
    /// `updatedAt`; `None`: the slug was free). Answers `false` when the
    /// row changed meanwhile or the slug was taken: read again.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_destination(
        &self,
        d: &Destination,
        read_at: Option<i64>,
    ) -> Result<bool, StoreError> {
        let item = encode(&DestinationItem::of(d, dest_pk(&d.site_id)), "destination")?;
        let put = self
            .ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(item));
        let put = match read_at {
            Some(at) => put
                .condition_expression("updatedAt = :at AND attribute_not_exists(archivedAt)")
                .expression_attribute_values(":at", n(at)),
            None => put.condition_expression("attribute_not_exists(pk)"),
        };
        Ok(applied(put.send().await)?.is_some())
    }

    /// One destination, strongly read.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_destination(
        &self,
        site: &str,
        slug: &str,
    ) -> Result<Option<Destination>, StoreError> {
        let item = self.read_item(dest_pk(site), slug).await?;
        item.as_ref().map(Destination::from_item).transpose()
    }

    /// The site's destinations by slug, archived ones too: all of them,
    /// since a live one sorted after many archived ones must still take
    /// its events (pages end at 1 MB, so however many that takes).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_destinations(&self, site: &str) -> Result<Vec<Destination>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(dest_pk(site)))
            .consistent_read(true);
        let mut found = vec![];
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                found.push(Destination::from_item(item)?);
            }
            Ok(found.len() < MAX_LISTED)
        })
        .await?;
        Ok(found)
    }

    /// Archives a live destination: it takes no new events, its
    /// credentials are erased, its row and conversions stay. Answers
    /// `false` when there was no live destination under the slug.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn archive_destination(
        &self,
        site: &str,
        slug: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let res = self
            .update_item(dest_pk(site), slug)
            .update_expression(
                "SET archivedAt = :now, updatedAt = :now, enabled = :f REMOVE sealedCredentials",
            )
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(archivedAt)")
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":f", AttributeValue::Bool(false))
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }

    /// Stops a destination whose credentials the platform refused, only if
    /// they are still the stored ones. Answers whether it stopped it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn stop_destination(
        &self,
        site: &str,
        slug: &str,
        credential_version: &str,
        last_error: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let res = self
            .update_item(dest_pk(site), slug)
            .update_expression("SET stopped = :t, lastError = :e, updatedAt = :now")
            .condition_expression("credentialVersion = :v AND attribute_not_exists(archivedAt)")
            .expression_attribute_values(":t", AttributeValue::Bool(true))
            .expression_attribute_values(":e", s(last_error))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":v", s(credential_version))
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }
}
