//! The Pages an owner's token lists, each with its own token sealed: the
//! listing replaced whole at each connect, login or refresh (a Page the
//! token no longer lists leaves, its token with it), read with one query.
//! And the links of Pages to sites: one site a Page, written and removed
//! from both sides in one transaction.

use adtrail_domain::leadads::{OwnerPage, PageLink};
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem};

use crate::attr::s;
use crate::items::{PageItem, PageLinkItem, decode, encode};
use crate::keys::{PAGE_LINK_SK, PK, SK, page_link_pk, page_pk, site_page_pk};
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
        self.query_pages(query, 1, |items| {
            for item in items {
                found.push(decode::<PageItem>(item, "page")?.into());
            }
            Ok(true)
        })
        .await?;
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
        let page_side = encode(
            &PageLinkItem::of(link, page_link_pk(&link.page_id), PAGE_LINK_SK.into()),
            "page link",
        )?;
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
}
