//! The ad catalog of a site: campaign → ad set → ad names, Meta's effective
//! status, the creative type and the stored thumbnail. A field Meta did not
//! send keeps its stored value.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use adtrail_domain::catalog::CatalogEntry;

use crate::attr::{Item, n, s};
use crate::items::{CatalogItem, decode};
use crate::keys::{PK, SK, catalog_pk};
use crate::lease::LeaseCondition;
use crate::{Catalog, StoreError};

/// The most catalog entries a site read returns.
pub const MAX_CATALOG: usize = 20_000;

const FIELDS: [&str; 8] = [
    "adName",
    "adsetId",
    "adsetName",
    "campaignId",
    "campaignName",
    "adStatus",
    "creativeType",
    "thumbnailKey",
];

fn entry_of(item: &Item) -> Result<CatalogEntry, StoreError> {
    Ok(decode::<CatalogItem>(item, "catalog entry")?.into())
}

fn fields(entry: &CatalogEntry) -> [(&'static str, Option<&String>); 7] {
    [
        (FIELDS[0], entry.ad_name.as_ref()),
        (FIELDS[1], entry.adset_id.as_ref()),
        (FIELDS[2], entry.adset_name.as_ref()),
        (FIELDS[3], entry.campaign_id.as_ref()),
        (FIELDS[4], entry.campaign_name.as_ref()),
        (FIELDS[5], entry.ad_status.as_ref()),
        (FIELDS[6], entry.creative_type.as_ref()),
    ]
}

impl Catalog<'_> {
    /// A site's catalog by ad id (paged, at most [`MAX_CATALOG`]).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_catalog(
        &self,
        site: &str,
    ) -> Result<HashMap<String, CatalogEntry>, StoreError> {
        let mut entries = HashMap::new();
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(catalog_pk(site)));
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                let entry = entry_of(item)?;
                entries.insert(entry.ad_id.clone(), entry);
            }
            Ok(entries.len() < MAX_CATALOG)
        })
        .await?;
        Ok(entries)
    }

    /// Catalog entries of the given ads (absent ones left out).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn catalog_entries(
        &self,
        site: &str,
        ad_ids: &[String],
    ) -> Result<Vec<CatalogEntry>, StoreError> {
        let keys = ad_ids
            .iter()
            .map(|a| (catalog_pk(site), a.clone()))
            .collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(entry_of)
            .collect::<Result<_, _>>()
    }

    /// Merges entries into the site's catalog under `cond`, filing each ad
    /// under the run's account. Answers `false` as soon as the condition fails.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn upsert_catalog(
        &self,
        cond: &LeaseCondition,
        entries: &[CatalogEntry],
        now: i64,
    ) -> Result<bool, StoreError> {
        let t = &self.names.table;
        for chunk in entries.chunks(99) {
            let mut items = vec![cond.check(t)?];
            for entry in chunk {
                let mut set = vec![
                    "adAccountId = :acct".to_owned(),
                    "updatedAt = :now".to_owned(),
                ];
                let mut update = Update::builder()
                    .table_name(t)
                    .key(PK, s(catalog_pk(cond.site_id())))
                    .key(SK, s(&entry.ad_id))
                    .expression_attribute_values(":acct", s(cond.ad_account_id()))
                    .expression_attribute_values(":now", n(now));
                for (i, (field, value)) in fields(entry).into_iter().enumerate() {
                    if let Some(v) = value {
                        set.push(format!("{field} = :f{i}"));
                        update = update.expression_attribute_values(format!(":f{i}"), s(v));
                    }
                }
                let update = update
                    .update_expression(format!("SET {}", set.join(", ")))
                    .build()
                    .map_err(StoreError::ddb)?;
                items.push(TransactWriteItem::builder().update(update).build());
            }
            if !self.transact_under_lease(items).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records, under `cond`, where each ad's copied thumbnail is stored
    /// (`(adId, key)` pairs, 99 a transaction). Answers `false` as soon as
    /// the condition fails.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn set_thumbnails(
        &self,
        cond: &LeaseCondition,
        stored: &[(String, String)],
    ) -> Result<bool, StoreError> {
        for chunk in stored.chunks(99) {
            let mut items = vec![cond.check(&self.names.table)?];
            for (ad, key) in chunk {
                let update = Update::builder()
                    .table_name(&self.names.table)
                    .key(PK, s(catalog_pk(cond.site_id())))
                    .key(SK, s(ad))
                    .update_expression("SET thumbnailKey = :key")
                    .expression_attribute_values(":key", s(key))
                    .build()
                    .map_err(StoreError::ddb)?;
                items.push(TransactWriteItem::builder().update(update).build());
            }
            if !self.transact_under_lease(items).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
