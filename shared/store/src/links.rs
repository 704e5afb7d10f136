//! Links between a site and a Meta ad account (`SiteAdAccount`): who linked
//! it, its sync cursor and state, and the run that holds it.
//!
//! A run holds a link while the link's `runId` is its own. Every write a run
//! makes is conditional on that (here, and through [`LeaseCondition`] in the
//! spend and catalog writes), so an unlinked account or a run replaced after
//! its lease takes no write.

use adtrail_domain::links::SiteAdAccount;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{FromItem, Item, get_s, s};
use crate::items::{LinkItem, decode};
use crate::keys::*;
use crate::{Links, StoreError};

impl FromItem for SiteAdAccount {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<LinkItem>(item, "link")?.try_into()
    }
}

pub(crate) fn key(site: &str, account: &str) -> [(String, AttributeValue); 2] {
    [
        (PK.into(), s(site_pk(site))),
        (SK.into(), s(link_sk(account))),
    ]
}

impl Links<'_> {
    /// Which site an ad account feeds, if any.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn account_claim(&self, account: &str) -> Result<Option<String>, StoreError> {
        let item = self.read_item(claim_pk(account), CLAIM_SK).await?;
        Ok(item
            .as_ref()
            .and_then(|i| get_s(i, "siteId"))
            .map(str::to_owned))
    }

    /// One link, read strongly.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_link(
        &self,
        site: &str,
        account: &str,
    ) -> Result<Option<SiteAdAccount>, StoreError> {
        self.get_link_as(site, account, true).await
    }

    /// One link, read strongly or, for half the units, eventually (a read
    /// that may miss the last second's writes: the sync worker's, which
    /// reads again strongly when the link does not show its run).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_link_as(
        &self,
        site: &str,
        account: &str,
        consistent: bool,
    ) -> Result<Option<SiteAdAccount>, StoreError> {
        let item = self
            .read_item_as(site_pk(site), &link_sk(account), consistent)
            .await?;
        item.as_ref().map(SiteAdAccount::from_item).transpose()
    }

    /// A site's links (at most [`MAX_LINKS_PER_SITE`], so one page as a
    /// rule; read to the end all the same).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_links(&self, site: &str) -> Result<Vec<SiteAdAccount>, StoreError> {
        self.site_link_items(site)
            .await?
            .iter()
            .map(SiteAdAccount::from_item)
            .collect()
    }

    /// A site's link items as stored, read strongly (see
    /// [`Links::site_links`]).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn site_link_items(&self, site: &str) -> Result<Vec<Item>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(site_pk(site)))
            .expression_attribute_values(":prefix", s(LINK_SK_PREFIX))
            .consistent_read(true);
        self.query_all(query).await
    }

    /// An owner's links, through the `owner` index (bounded by the 500-link
    /// limit of a connection; paged).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn owner_links(&self, owner: &str) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .owner_index(owner, LINK_SK_PREFIX, 20)
            .await?
            .iter()
            .filter_map(|item| {
                Some((
                    get_s(item, "siteId")?.to_owned(),
                    get_s(item, "adAccountId")?.to_owned(),
                ))
            })
            .collect())
    }

    /// The `owner` index's entries of `owner` whose sort key starts with
    /// `prefix`, at most `max_pages` pages.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn owner_index(
        &self,
        owner: &str,
        prefix: &str,
        max_pages: usize,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = vec![];
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(GSI1)
            .key_condition_expression("gsi1pk = :pk AND begins_with(gsi1sk, :prefix)")
            .expression_attribute_values(":pk", s(owner_pk(owner)))
            .expression_attribute_values(":prefix", s(prefix));
        self.query_pages(query, max_pages, |page| {
            items.extend_from_slice(page);
            Ok(true)
        })
        .await?;
        Ok(items)
    }
}

impl Links<'_> {
    /// Which site each of `accounts` feeds, if any (one batch read).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn account_claims(
        &self,
        accounts: &[String],
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        let keys = accounts
            .iter()
            .map(|a| (claim_pk(a), CLAIM_SK.to_owned()))
            .collect();
        let mut claims = std::collections::HashMap::new();
        for item in self.batch_read(keys).await? {
            if let (Some(account), Some(site)) = (
                get_s(&item, PK).and_then(parse_claim_pk),
                get_s(&item, "siteId"),
            ) {
                claims.insert(account.to_owned(), site.to_owned());
            }
        }
        Ok(claims)
    }
}
