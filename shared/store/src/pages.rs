//! The Pages an owner's token lists, each with its own token sealed: the
//! listing replaced whole at each connect, login or refresh (a Page the
//! token no longer lists leaves, its token with it), read with one query.
//! And the links of Pages to sites: one site a Page, written and removed
//! from both sides in one transaction.

use adtrail_domain::leadads::{OwnerPage, PageLink};
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};

use crate::attr::{get_s, n, s};
use crate::items::{PageItem, PageLinkItem, decode, encode};
use crate::keys::{
    PAGE_LINK_SK, PK, SK, WORK_AT, WORK_SHARDS, page_link_pk, page_pk, reconcile_shard,
    reconcile_shard_n, site_page_pk,
};
use crate::write::applied;
use crate::{Pages, StoreError};

/// Pages an owner's listing reads at most.
const MAX_LISTED: i32 = 1_000;

impl Pages<'_> {
    /// The owner's listed Pages, by id.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_pages(&self, owner: &str) -> Result<Vec<OwnerPage>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(page_pk(owner)))
            .consistent_read(true)
            .limit(MAX_LISTED);
        let mut found = vec![];
        // Pages of up to 1 MB: the listing's 1,000 may take more than one.
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                found.push(decode::<PageItem>(item, "page")?.into());
            }
            Ok(found.len() < MAX_LISTED as usize)
        })
        .await?;
        found.truncate(MAX_LISTED as usize);
        Ok(found)
    }

    /// One of the owner's listed Pages, with its sealed token.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_page(&self, owner: &str, page: &str) -> Result<Option<OwnerPage>, StoreError> {
        let item = self.read_item(page_pk(owner), page).await?;
        item.map(|i| decode::<PageItem>(&i, "page").map(OwnerPage::from))
            .transpose()
    }

    #[cfg(feature = "kms")]
    /// The Page's own token, opened with KMS, when the owner's listing
    /// holds it and its user can `ADVERTISE` there (Meta's condition to
    /// read its leads); `None` otherwise.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB or KMS fails.
    pub async fn open_page_token(
        &self,
        owner: &str,
        page: &str,
    ) -> Result<Option<String>, StoreError> {
        let Some(listed) = self
            .get_page(owner, page)
            .await?
            .filter(OwnerPage::leads_allowed)
        else {
            return Ok(None);
        };
        let token = self
            .sealer()
            .unseal_page(owner, page, &listed.sealed_token)
            .await?;
        Ok(Some(token))
    }

    /// Stores `listed` as the owner's Pages: each written whole, and the
    /// Pages stored before that `listed` lacks deleted.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn replace_pages(&self, owner: &str, listed: &[OwnerPage]) -> Result<(), StoreError> {
        let before = self.list_pages(owner).await?;
        let puts = listed
            .iter()
            .map(|p| encode(&PageItem::of(p, page_pk(owner)), "page"))
            .collect::<Result<_, _>>()?;
        let gone = before
            .iter()
            .filter(|b| !listed.iter().any(|p| p.page_id == b.page_id))
            .map(|b| (page_pk(owner), b.page_id.clone()))
            .collect();
        self.put_and_delete(puts, gone).await
    }

    /// The site a Page feeds, if any.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn page_link(&self, page: &str) -> Result<Option<PageLink>, StoreError> {
        let item = self.read_item(page_link_pk(page), PAGE_LINK_SK).await?;
        item.map(|i| decode::<PageLinkItem>(&i, "page link").map(PageLink::from))
            .transpose()
    }

    /// The sites `pages` feed, those linked, read in batches of 100.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn page_links(&self, pages: &[&str]) -> Result<Vec<PageLink>, StoreError> {
        let keys = pages
            .iter()
            .map(|p| (page_link_pk(p), PAGE_LINK_SK.to_owned()))
            .collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(|i| decode::<PageLinkItem>(i, "page link").map(PageLink::from))
            .collect()
    }

    /// Links a Page to its site, from both sides at once. Answers `false`
    /// when the Page already feeds a site (read it again).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn link_page(&self, link: &PageLink) -> Result<bool, StoreError> {
        let t = &self.names.table;
        // The Page's side is due for its first reconciliation (the
        // backfill) at once.
        let mut page_item =
            PageLinkItem::of(link, page_link_pk(&link.page_id), PAGE_LINK_SK.into());
        page_item.work_shard = Some(reconcile_shard(&link.page_id));
        page_item.work_at = Some(link.subscribed_at);
        let page_side = encode(&page_item, "page link")?;
        let site_side = encode(
            &PageLinkItem::of(link, site_page_pk(&link.site_id), link.page_id.clone()),
            "page link",
        )?;
        let items = vec![
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(t)
                        .set_item(Some(page_side))
                        .condition_expression("attribute_not_exists(pk)")
                        .build()
                        .map_err(StoreError::ddb)?,
                )
                .build(),
            TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(t)
                        .set_item(Some(site_side))
                        .build()
                        .map_err(StoreError::ddb)?,
                )
                .build(),
        ];
        Ok(self.transact(items).await?.is_none())
    }

    /// The Pages linked to `site`, by its side of each link.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_pages(&self, site: &str) -> Result<Vec<String>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(site_page_pk(site)));
        let mut pages = vec![];
        self.query_pages(query, 10, |items| {
            pages.extend(items.iter().filter_map(|i| get_s(i, SK).map(str::to_owned)));
            Ok(true)
        })
        .await?;
        Ok(pages)
    }

    /// Removes a Page's link to `site`. Answers `false` when the Page did
    /// not feed that site.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn unlink_page(&self, site: &str, page: &str) -> Result<bool, StoreError> {
        let t = &self.names.table;
        let delete =
            |pk: String, sk: &str, condition: bool| -> Result<TransactWriteItem, StoreError> {
                let mut d = Delete::builder()
                    .table_name(t)
                    .key(PK, s(pk))
                    .key(SK, s(sk));
                if condition {
                    d = d
                        .condition_expression("siteId = :site")
                        .expression_attribute_values(":site", s(site));
                }
                Ok(TransactWriteItem::builder()
                    .delete(d.build().map_err(StoreError::ddb)?)
                    .build())
            };
        let items = vec![
            delete(page_link_pk(page), PAGE_LINK_SK, true)?,
            delete(site_page_pk(site), page, false)?,
        ];
        Ok(self.transact(items).await?.is_none())
    }

    /// Linked Pages whose reconciliation is due at `now`, with the due
    /// time each was seen at (to claim it), at most `per_shard` a shard.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn due_reconciles(
        &self,
        now: i64,
        per_shard: i32,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut found = vec![];
        for shard in 0..WORK_SHARDS {
            let items = self
                .work_shard(reconcile_shard_n(shard), Some(now), per_shard)
                .await?;
            for item in &items {
                let page = get_s(item, PK).and_then(|pk| pk.strip_prefix("pagelink#"));
                let at = item
                    .get(WORK_AT)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|v| v.parse().ok());
                if let (Some(page), Some(at)) = (page, at) {
                    found.push((page.to_owned(), at));
                }
            }
        }
        Ok(found)
    }

    /// Takes a Page's reconciliation: moves its due time to `until` if it
    /// is still `seen` (another sweep took it otherwise, or it was
    /// unlinked). Answers whether this sweep has it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn claim_reconcile(
        &self,
        page: &str,
        seen: i64,
        until: i64,
    ) -> Result<bool, StoreError> {
        let update = self
            .update_item(page_link_pk(page), PAGE_LINK_SK)
            .update_expression("SET workAt = :until")
            .condition_expression("workAt = :seen")
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":seen", n(seen))
            .send()
            .await;
        Ok(applied(update)?.is_some())
    }

    /// Records a reconciliation's end on the Page's side of the link: its
    /// checkpoint when it read everything (`through`), its error, and when
    /// the next is due. A Page unlinked meanwhile stays unlinked.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn finish_reconcile(
        &self,
        page: &str,
        at: i64,
        through: Option<i64>,
        last_error: Option<&str>,
        next_at: i64,
    ) -> Result<(), StoreError> {
        let mut set = vec!["workAt = :next", "lastReconcileAt = :at"];
        let mut update = self
            .update_item(page_link_pk(page), PAGE_LINK_SK)
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":next", n(next_at))
            .expression_attribute_values(":at", n(at));
        if let Some(through) = through {
            set.push("reconciledThrough = :through");
            update = update.expression_attribute_values(":through", n(through));
        }
        let expression = match last_error {
            Some(e) => {
                set.push("lastError = :error");
                update = update.expression_attribute_values(":error", s(e));
                format!("SET {}", set.join(", "))
            }
            None => format!("SET {} REMOVE lastError", set.join(", ")),
        };
        applied(update.update_expression(expression).send().await)?;
        Ok(())
    }
}
