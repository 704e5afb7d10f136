//! Erasing a site: `begin_erase` marks it (an erasure item in the work
//! index) and removes the site itself, so every route answers `404` for it
//! at once; then the sweeper deletes everything else of the site in
//! bounded steps, partition by partition, the ones other partitions name
//! (a board's column entries, a form's leads and counters) before the
//! ones that name them. The erasure ends once a pass finds nothing left,
//! the purges of its unlinked accounts are done, and a grace period has
//! passed for requests that read the site before it went; its own item
//! goes last, so nothing of the site remains.

use adtrail_domain::time::MINUTE_MS;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
use serde::{Deserialize, Serialize};

use crate::attr::{Item, get_s, s};
use crate::items::{CatalogItem, decode, encode};
use crate::keys::*;
use crate::{Sites, StoreError};

/// Requests that read the site before it went may still write for this
/// long (API Gateway gives a request 29 seconds, a sync run's writes are
/// conditional on its link, which goes first).
pub const ERASE_GRACE_MS: i64 = 5 * MINUTE_MS;

/// Keys read per query page of a partition being erased.
const KEYS_PER_PAGE: i32 = 100;

/// A site being erased, and how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Erasure {
    pub site_id: String,
    pub started_at: i64,
    /// Items deleted so far (the spend rows of its accounts are the
    /// purges').
    pub deleted_items: i64,
    /// The site's Lead Ads forms when the erasure began: their leads and
    /// counters are found by them once the Pages are unlinked.
    pub forms: Vec<String>,
}

/// `erase#<siteId>` / `erase`, in the work index while it runs.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ErasureItem {
    pk: String,
    sk: String,
    site_id: String,
    started_at: i64,
    #[serde(default)]
    deleted_items: i64,
    #[serde(default)]
    forms: Vec<String>,
    work_shard: String,
    work_at: i64,
}

impl From<ErasureItem> for Erasure {
    fn from(i: ErasureItem) -> Self {
        Erasure {
            site_id: i.site_id,
            started_at: i.started_at,
            deleted_items: i.deleted_items,
            forms: i.forms,
        }
    }
}

/// What one step of an erasure did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EraseStep {
    /// Items deleted by this step.
    pub deleted: usize,
    /// The thumbnails of the catalog entries it deleted: no longer
    /// referenced (the bucket's lifecycle expires them once tagged so).
    pub thumbnails: Vec<String>,
    /// Nothing of the site is left: its erasure item is gone too.
    pub done: bool,
}

/// Every partition a site's items live in, those other partitions name
/// first (the board's column entries, each form's leads and counters).
fn site_partitions(site: &str, columns: &[String], forms: &[String]) -> Vec<String> {
    let mut pks: Vec<String> = columns.iter().map(|c| entry_pk(site, c)).collect();
    for form in forms {
        pks.push(form_leads_pk(site, form));
        pks.push(form_day_pk(site, form));
    }
    pks.extend([
        lead_pk(site),
        lead_ad_pk(site),
        rollup_pk(site),
        change_pk(site),
        posted_pk(site),
        conv_pk(site),
        send_batch_pk(site),
        receipt_pk(site),
    ]);
    pks.extend((0..COUNT_SHARDS).map(|n| count_pk(site, n)));
    pks.extend([
        dest_pk(site),
        catalog_pk(site),
        form_lead_ref_pk(site),
        site_page_pk(site),
        site_forms_pk(site),
        site_pk(site),
    ]);
    pks
}

impl Sites<'_> {
    /// Starts erasing `site` (or answers the erasure already running):
    /// the erasure item is written, then the site and its place in the
    /// sites' list are deleted. Its links, pixel and Pages are the
    /// caller's to unlink first, its `forms` read before.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn begin_erase(
        &self,
        site: &str,
        forms: Vec<String>,
        now: i64,
    ) -> Result<Erasure, StoreError> {
        let item = ErasureItem {
            pk: erase_pk(site),
            sk: ERASE_SK.into(),
            site_id: site.into(),
            started_at: now,
            deleted_items: 0,
            forms,
            work_shard: erase_shard(site),
            work_at: now,
        };
        let put = Put::builder()
            .table_name(&self.names.table)
            .set_item(Some(encode(&item, "erasure")?))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(StoreError::ddb)?;
        // A retry finds the erasure written: it goes on from there.
        let _ = self
            .transact(vec![TransactWriteItem::builder().put(put).build()])
            .await?;
        self.put_and_delete(
            vec![],
            vec![
                (site_pk(site), SITE_SK.into()),
                (SITES_PK.into(), site.into()),
            ],
        )
        .await?;
        self.erasure(site)
            .await?
            .ok_or(StoreError::Condition("the erasure vanished"))
    }

    /// The erasure of `site`, while it runs.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn erasure(&self, site: &str) -> Result<Option<Erasure>, StoreError> {
        self.read_item(erase_pk(site), ERASE_SK)
            .await?
            .map(|i| decode::<ErasureItem>(&i, "erasure").map(Erasure::from))
            .transpose()
    }

    /// The erasures running, at most `per_shard` from each shard of the
    /// work index.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn pending_erasures(&self, per_shard: i32) -> Result<Vec<Erasure>, StoreError> {
        let mut found = vec![];
        for shard in 0..WORK_SHARDS {
            // The index holds keys only: each erasure is read whole.
            for item in self
                .work_shard(erase_shard_n(shard), None, per_shard)
                .await?
            {
                let Some(site) = get_s(&item, PK).and_then(parse_erase_pk) else {
                    continue;
                };
                found.extend(self.erasure(site).await?);
            }
        }
        Ok(found)
    }

    /// Deletes up to `budget` items of the erasure's site, and answers what
    /// it did; done when a step found nothing, no purge of the site is
    /// left and the grace period has passed.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails or leaves writes unprocessed.
    pub async fn erase_step(
        &self,
        erasure: &Erasure,
        budget: usize,
        now: i64,
    ) -> Result<EraseStep, StoreError> {
        let site = erasure.site_id.as_str();
        let mut step = EraseStep::default();
        // Links and Pages made after the caller unlinked the site's own go
        // as an unlink takes them: their claims and their Pages' side too.
        for link in self.links().site_links(site).await? {
            self.links()
                .unlink_from_erased_site(site, &link.ad_account_id, now)
                .await?;
            step.deleted += 1;
        }
        for page in self.pages().site_pages(site).await? {
            self.pages().unlink_page(site, &page).await?;
            step.deleted += 1;
        }
        let columns = self.boards().get_board(site).await?.columns;
        let columns: Vec<String> = columns.iter().flatten().map(|c| c.key.clone()).collect();
        let mut forms: Vec<String> = self
            .forms()
            .site_forms(site)
            .await?
            .forms
            .into_iter()
            .map(|f| f.form_id)
            .chain(erasure.forms.iter().cloned())
            .collect();
        forms.sort();
        forms.dedup();
        for pk in site_partitions(site, &columns, &forms) {
            if step.deleted >= budget {
                break;
            }
            self.erase_partition(&pk, budget - step.deleted, &mut step)
                .await?;
        }
        if step.deleted > 0 {
            self.count_erased(site, step.deleted).await?;
            return Ok(step);
        }
        let purging = self.purge_pending(site).await?;
        if !purging && now >= erasure.started_at + ERASE_GRACE_MS {
            self.put_and_delete(vec![], vec![(erase_pk(site), ERASE_SK.into())])
                .await?;
            step.done = true;
        }
        Ok(step)
    }

    /// Deletes up to `budget` items of one partition, noting the
    /// thumbnails of the catalog entries among them.
    async fn erase_partition(
        &self,
        pk: &str,
        budget: usize,
        step: &mut EraseStep,
    ) -> Result<(), StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(pk))
            .limit(KEYS_PER_PAGE);
        let mut keys: Vec<(String, String)> = vec![];
        let catalog = pk.starts_with("catalog#");
        self.query_pages(query, budget.div_ceil(KEYS_PER_PAGE as usize), |items| {
            for item in items {
                if keys.len() >= budget {
                    return Ok(false);
                }
                if catalog {
                    step.thumbnails.extend(thumbnail_of(item));
                }
                if let (Some(pk), Some(sk)) = (get_s(item, PK), get_s(item, SK)) {
                    keys.push((pk.to_owned(), sk.to_owned()));
                }
            }
            Ok(true)
        })
        .await?;
        step.deleted += keys.len();
        self.put_and_delete(vec![], keys).await
    }

    /// Adds `n` to the erasure's count of deleted items.
    async fn count_erased(&self, site: &str, n: usize) -> Result<(), StoreError> {
        self.update_item(erase_pk(site), ERASE_SK)
            .update_expression("ADD deletedItems :n")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":n", crate::attr::n(n))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(())
    }

    /// Whether a purge of one of the site's unlinked accounts is left.
    async fn purge_pending(&self, site: &str) -> Result<bool, StoreError> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(purge_pk(site)))
            .limit(1)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(!out.items().is_empty())
    }
}

/// A catalog entry's thumbnail, if it has one.
fn thumbnail_of(item: &Item) -> Option<String> {
    decode::<CatalogItem>(item, "catalog entry")
        .ok()
        .and_then(|c| c.thumbnail_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partitions_others_name_come_first_and_the_site_last() {
        let pks = site_partitions("s1", &["novo".into()], &["555".into()]);
        assert_eq!(
            &pks[..3],
            ["entry#s1#novo", "formleads#s1#555", "formday#s1#555"]
        );
        assert_eq!(pks.last().map(String::as_str), Some("site#s1"));
        let forms = pks.iter().position(|p| p == "siteforms#s1").unwrap();
        let board = pks.iter().position(|p| p == "site#s1").unwrap();
        assert!(forms < board);
        assert_eq!(pks.iter().filter(|p| p.starts_with("count#s1#")).count(), 8);
    }
}
