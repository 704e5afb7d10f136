//! The ad catalog of a site: campaign → ad set → ad names, Meta's effective
//! status, the creative type and the stored thumbnail. A field Meta did not
//! send keeps its stored value.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use adtrail_domain::catalog::CatalogEntry;

use crate::attr::{Item, get_s, n, s};
use crate::items::{CatalogItem, decode};
use crate::keys::{PK, SK, catalog_pk};
use crate::lease::LeaseCondition;
use crate::{Catalog, StoreError};

/// The most catalog entries a site read returns.
pub const MAX_CATALOG: usize = 20_000;
/// Entries [`Catalog::entries_of`] reads a page for each ad asked: an
/// entry is some 300 to 400 bytes and an item read alone is billed as
/// 4 KB, so a page of ten entries an ad costs about what reading the ads'
/// own entries would.
const PAGE_ENTRIES_PER_AD: usize = 10;
/// Ads still to find up to which [`Catalog::entries_of`] reads their
/// entries alone (half a unit each) rather than the next page (up to 1 MB,
/// 128 units).
const READ_ALONE_UP_TO: usize = 256;

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

    /// The entries of `ads` (absent ones left out), eventually read, in
    /// about the fewest read units whatever else the site's catalog holds:
    /// its entries from the first ad asked to the last, a page of ten
    /// entries an ad asked (all of a small catalog in one page); when a
    /// page leaves more and few enough ads to find, those ads' entries
    /// alone. What it reads grows with the ads asked, not with the catalog.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn entries_of(
        &self,
        site: &str,
        ads: &BTreeSet<&str>,
    ) -> Result<HashMap<String, CatalogEntry>, StoreError> {
        let mut found = HashMap::new();
        let (Some(first), Some(last)) = (ads.first(), ads.last()) else {
            return Ok(found);
        };
        let limit =
            i32::try_from(ads.len().saturating_mul(PAGE_ENTRIES_PER_AD)).unwrap_or(i32::MAX);
        let mut start = None;
        loop {
            let out = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :first AND :last")
                .expression_attribute_values(":pk", s(catalog_pk(site)))
                .expression_attribute_values(":first", s(*first))
                .expression_attribute_values(":last", s(*last))
                .limit(limit)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::ddb)?;
            for item in out.items() {
                let entry = entry_of(item)?;
                if ads.contains(entry.ad_id.as_str()) {
                    found.insert(entry.ad_id.clone(), entry);
                }
            }
            let Some(next) = out.last_evaluated_key else {
                return Ok(found);
            };
            // An ad the pages went past without finding has no entry.
            let past = get_s(&next, SK).unwrap_or_default();
            let rest: Vec<String> = ads
                .range::<&str, _>((Bound::Excluded(past), Bound::Unbounded))
                .map(|ad| (*ad).to_owned())
                .collect();
            if rest.len() <= READ_ALONE_UP_TO {
                for entry in self.catalog_entries_as(site, &rest, false).await? {
                    found.insert(entry.ad_id.clone(), entry);
                }
                return Ok(found);
            }
            start = Some(next);
        }
    }

    /// Catalog entries of the given ads (absent ones left out), strongly
    /// read.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn catalog_entries(
        &self,
        site: &str,
        ad_ids: &[String],
    ) -> Result<Vec<CatalogEntry>, StoreError> {
        self.catalog_entries_as(site, ad_ids, true).await
    }

    /// [`Self::catalog_entries`], strongly read or not (`consistent`): an
    /// eventual read costs half the units (half a unit an entry) and may
    /// miss the last second's writes.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn catalog_entries_as(
        &self,
        site: &str,
        ad_ids: &[String],
        consistent: bool,
    ) -> Result<Vec<CatalogEntry>, StoreError> {
        let keys = ad_ids
            .iter()
            .map(|a| (catalog_pk(site), a.clone()))
            .collect();
        self.batch_read_as(keys, consistent)
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
