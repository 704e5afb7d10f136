//! Sites: a host's business unit, with the currency its revenue is in.

use crate::attr::{Item, get_s, n, s};
use crate::items::{SiteItem, decode};
use crate::keys::{PK, SITE_SK, SITES_PK, SK, site_pk};
use crate::{Sites, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub site_id: String,
    pub name: String,
    pub currency: String,
    pub country: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Site {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        Ok(decode::<SiteItem>(item, "site")?.into())
    }
}

impl Sites<'_> {
    /// Registers a site or updates its name, currency and country; keeps its
    /// creation time and link count. Answers the stored site.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_site(
        &self,
        site_id: &str,
        name: &str,
        currency: &str,
        country: Option<&str>,
        now: i64,
    ) -> Result<Site, StoreError> {
        let mut update = self
            .update_item(site_pk(site_id), SITE_SK)
            .expression_attribute_values(":id", s(site_id))
            .expression_attribute_values(":name", s(name))
            .expression_attribute_values(":cur", s(currency))
            .expression_attribute_values(":now", n(now))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew);
        let expr = match country {
            Some(c) => {
                update = update.expression_attribute_values(":country", s(c));
                "SET siteId = :id, #name = :name, currency = :cur, country = :country, updatedAt = :now, createdAt = if_not_exists(createdAt, :now)"
            }
            None => {
                "SET siteId = :id, #name = :name, currency = :cur, updatedAt = :now, createdAt = if_not_exists(createdAt, :now) REMOVE country"
            }
        };
        let out = update
            .update_expression(expr)
            .expression_attribute_names("#name", "name")
            .send()
            .await
            .map_err(StoreError::ddb)?;
        // Listed among the sites (again, harmlessly, on an update: a retry
        // after a failure here lists it).
        self.ddb
            .put_item()
            .table_name(&self.names.table)
            .item(PK, s(SITES_PK))
            .item(SK, s(site_id))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Site::from_item(&out.attributes.unwrap_or_default())
    }

    /// Site ids after `after` (all from the start without it), in order,
    /// at most `limit`: fewer only at the end of the list (the API's
    /// listing offers a next page when this answers `limit`).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_ids(
        &self,
        after: Option<&str>,
        limit: i32,
    ) -> Result<Vec<String>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .expression_attribute_values(":pk", s(SITES_PK))
            .limit(limit);
        let query = match after {
            Some(after) => query
                .key_condition_expression("pk = :pk AND sk > :after")
                .expression_attribute_values(":after", s(after)),
            None => query.key_condition_expression("pk = :pk"),
        };
        let want = usize::try_from(limit).unwrap_or(0);
        let mut ids = vec![];
        self.query_pages(query, usize::MAX, |items| {
            ids.extend(items.iter().filter_map(|i| get_s(i, SK).map(str::to_owned)));
            Ok(ids.len() < want)
        })
        .await?;
        ids.truncate(want);
        Ok(ids)
    }

    /// Sites by id, those registered, read in batches.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails or leaves keys unread.
    pub async fn get_sites(&self, ids: &[String]) -> Result<Vec<Site>, StoreError> {
        let keys = ids
            .iter()
            .map(|id| (site_pk(id), SITE_SK.to_owned()))
            .collect();
        let mut sites: Vec<Site> = self
            .batch_read(keys)
            .await?
            .iter()
            .map(Site::from_item)
            .collect::<Result<_, _>>()?;
        sites.sort_by(|a, b| a.site_id.cmp(&b.site_id));
        Ok(sites)
    }

    /// The site, if registered.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_site(&self, site_id: &str) -> Result<Option<Site>, StoreError> {
        let item = self.read_item(site_pk(site_id), SITE_SK).await?;
        item.as_ref().map(Site::from_item).transpose()
    }
}
