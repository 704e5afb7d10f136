//! Linking an ad account to a site and unlinking it: one transaction each,
//! with the account's claim (one site per account), the site's and the
//! connection's link counts under their limits, and the purge an unlink
//! leaves for the sweeper.

use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::outcome::SyncState;
use adtrail_domain::plan::{MAX_LINKS_PER_CONNECTION, MAX_LINKS_PER_SITE};
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};

use crate::attr::{FromItem, Item, n, s};
use crate::connections::ListedAccount;
use crate::items::{NewLinkItem, encode};
use crate::keys::*;
use crate::links::key;
use crate::spend::held::{Exprs, held_of, sum_add};
use crate::write::transaction_failed_at;
use crate::{Links, StoreError};

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the ad account feeds another site")]
    Claimed,
    #[error("the site has {MAX_LINKS_PER_SITE} linked ad accounts already")]
    SiteLimit,
    #[error("the connection has {MAX_LINKS_PER_CONNECTION} linked ad accounts already")]
    ConnectionLimit,
    #[error("the site or the connection is gone")]
    Gone,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Links<'_> {
    /// Links `account` (from the owner's listing) to `site`: the account is
    /// claimed for this site, counted against both limits, and due at once
    /// for its backfill. A purge still running for the pair stops.
    ///
    /// # Errors
    /// [`LinkError`] naming the rule that refused it.
    pub async fn link_account(
        &self,
        site: &str,
        owner: &str,
        account: &ListedAccount,
        now: i64,
    ) -> Result<SiteAdAccount, LinkError> {
        let t = &self.names.table;
        let id = &account.ad_account_id;
        let item = new_link_item(site, owner, account, now)?;
        let put_link = Put::builder()
            .table_name(t)
            .set_item(Some(item.clone()))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(StoreError::ddb)?;
        let put_claim = Put::builder()
            .table_name(t)
            .item(PK, s(claim_pk(id)))
            .item(SK, s(CLAIM_SK))
            .item("siteId", s(site))
            .item("ownerKey", s(owner))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .map_err(StoreError::ddb)?;
        let count = |pk: String, sk: &str, max: usize| count_link(t, pk, sk, max);
        let stop_purge = Delete::builder()
            .table_name(t)
            .key(PK, s(purge_pk(site)))
            .key(SK, s(id))
            .build()
            .map_err(StoreError::ddb)?;
        let res = self
            .send_transaction(vec![
                TransactWriteItem::builder().put(put_link).build(),
                TransactWriteItem::builder().put(put_claim).build(),
                TransactWriteItem::builder()
                    .update(count(site_pk(site), SITE_SK, MAX_LINKS_PER_SITE)?)
                    .build(),
                TransactWriteItem::builder()
                    .update(count(
                        owner_pk(owner),
                        CONNECTION_SK,
                        MAX_LINKS_PER_CONNECTION,
                    )?)
                    .build(),
                TransactWriteItem::builder().delete(stop_purge).build(),
            ])
            .await;
        match res {
            Ok(_) => SiteAdAccount::from_item(&item).map_err(LinkError::from),
            Err(e) => match transaction_failed_at(&e) {
                Some(0 | 1) => Err(LinkError::Claimed),
                Some(2) => Err(self
                    .limit_or_gone(&site_pk(site), SITE_SK, LinkError::SiteLimit)
                    .await),
                Some(3) => Err(self
                    .limit_or_gone(&owner_pk(owner), CONNECTION_SK, LinkError::ConnectionLimit)
                    .await),
                _ => Err(StoreError::ddb(e).into()),
            },
        }
    }

    /// Why a count's condition failed: the item is gone, or at its limit.
    async fn limit_or_gone(&self, pk: &str, sk: &str, limit: LinkError) -> LinkError {
        match self.read_item(pk.to_owned(), sk).await {
            Ok(None) => LinkError::Gone,
            Ok(Some(_)) => limit,
            Err(e) => e.into(),
        }
    }

    /// Unlinks: the link and the claim go, the counts drop, and a purge of
    /// the account's spend at the site is recorded for the sweeper, all in
    /// one transaction. A run in flight loses its lease with the link.
    /// Answers `false` when the account was not linked to the site.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn unlink_account(
        &self,
        site: &str,
        account: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.unlink(site, account, now, true, true).await
    }

    /// Unlinks as [`Links::unlink_account`] does, for an owner being
    /// removed whole: its connection's count is left alone (the connection
    /// goes next), so the owner's links at different sites can be unlinked
    /// at once without all contending for that one item. A removal that
    /// stops half-way leaves that count high until it is repeated (and the
    /// connection goes), never low.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn unlink_for_removal(
        &self,
        site: &str,
        account: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.unlink(site, account, now, false, true).await
    }

    /// Unlinks as [`Links::unlink_account`] does, from a site being erased:
    /// the site (and its count) is gone already.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn unlink_from_erased_site(
        &self,
        site: &str,
        account: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        self.unlink(site, account, now, true, false).await
    }

    /// The unlink's transaction, made again when a run moved the day sums
    /// the link holds between its read and its write.
    async fn unlink(
        &self,
        site: &str,
        account: &str,
        now: i64,
        count_owner: bool,
        count_site: bool,
    ) -> Result<bool, StoreError> {
        const TRIES: usize = 5;
        for _ in 0..TRIES {
            let unlinked = self
                .unlink_once(site, account, now, count_owner, count_site)
                .await?;
            if let Some(unlinked) = unlinked {
                return Ok(unlinked);
            }
        }
        Err(StoreError::Condition(
            "a run kept moving the link's day sums while it was unlinked",
        ))
    }

    /// One unlink: `None` when the link's held day sums changed since read.
    async fn unlink_once(
        &self,
        site: &str,
        account: &str,
        now: i64,
        count_owner: bool,
        count_site: bool,
    ) -> Result<Option<bool>, StoreError> {
        let Some(item) = self
            .read_item_as(site_pk(site), &link_sk(account), true)
            .await?
        else {
            return Ok(Some(false));
        };
        let link = SiteAdAccount::from_item(&item)?;
        let t = &self.names.table;
        // The day sums the link holds go to their sum items, on the
        // figures read, so the rows a purge has not reached yet (and a
        // link made again keeps) stay summed.
        let held = held_of(&item);
        let mut pins = Exprs::default();
        let (pinned, _) = pins.pin(&held);
        let delete_link = Delete::builder()
            .table_name(t)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression(
                std::iter::once("attribute_exists(pk)".to_owned())
                    .chain(pinned)
                    .collect::<Vec<_>>()
                    .join(" AND "),
            )
            .set_expression_attribute_names(Some(pins.names).filter(|m| !m.is_empty()))
            .set_expression_attribute_values(Some(pins.values).filter(|m| !m.is_empty()))
            .build()
            .map_err(StoreError::ddb)?;
        let delete_claim = Delete::builder()
            .table_name(t)
            .key(PK, s(claim_pk(account)))
            .key(SK, s(CLAIM_SK))
            .build()
            .map_err(StoreError::ddb)?;
        let uncount = |pk: String, sk: &str| {
            Update::builder()
                .table_name(t)
                .key(PK, s(pk))
                .key(SK, s(sk))
                .update_expression("ADD linkCount :minus")
                .condition_expression("attribute_exists(pk)")
                .expression_attribute_values(":minus", n(-1))
                .build()
                .map_err(StoreError::ddb)
        };
        let purge = Put::builder()
            .table_name(t)
            .item(PK, s(purge_pk(site)))
            .item(SK, s(account))
            .item("siteId", s(site))
            .item("adAccountId", s(account))
            .item(WORK_SHARD, s(purge_shard(site, account)))
            .item(WORK_AT, n(now))
            .build()
            .map_err(StoreError::ddb)?;
        let mut tx = vec![
            TransactWriteItem::builder().delete(delete_link).build(),
            TransactWriteItem::builder().delete(delete_claim).build(),
            TransactWriteItem::builder().put(purge).build(),
        ];
        if count_site {
            tx.push(
                TransactWriteItem::builder()
                    .update(uncount(site_pk(site), SITE_SK)?)
                    .build(),
            );
        }
        if count_owner
            && self
                .connections()
                .get_connection(&link.owner_key)
                .await?
                .is_some()
        {
            tx.push(
                TransactWriteItem::builder()
                    .update(uncount(owner_pk(&link.owner_key), CONNECTION_SK)?)
                    .build(),
            );
        }
        for (day, figures) in held {
            if !figures.is_zero() {
                tx.push(sum_add(t, (site, account), day, figures)?);
            }
        }
        match self.send_transaction(tx).await {
            Ok(_) => Ok(Some(true)),
            // The link gone, or its held sums moved: read again.
            Err(e) if transaction_failed_at(&e) == Some(0) => Ok(None),
            Err(e) => Err(StoreError::ddb(e)),
        }
    }
}

/// A new link's item: due at once for its backfill, in the owner's index.
fn new_link_item(
    site: &str,
    owner: &str,
    account: &ListedAccount,
    now: i64,
) -> Result<Item, StoreError> {
    let id = &account.ad_account_id;
    encode(
        &NewLinkItem {
            pk: site_pk(site),
            sk: link_sk(id),
            site_id: site,
            ad_account_id: id,
            owner_key: owner,
            name: &account.name,
            currency: &account.currency,
            timezone: &account.timezone,
            sync_state: SyncState::Backfill.as_str(),
            gsi1_pk: owner_pk(owner),
            gsi1_sk: owner_link_sk(site, id),
            due_shard: due_shard(site, id),
            next_sync_at: now,
            created_at: now,
        },
        "link",
    )
}

/// One more link counted on a site or a connection, below `max`.
fn count_link(table: &str, pk: String, sk: &str, max: usize) -> Result<Update, StoreError> {
    Update::builder()
        .table_name(table)
        .key(PK, s(pk))
        .key(SK, s(sk))
        .update_expression("ADD linkCount :one")
        .condition_expression(
            "attribute_exists(pk) AND (attribute_not_exists(linkCount) OR linkCount < :max)",
        )
        .expression_attribute_values(":one", n(1))
        .expression_attribute_values(":max", n(max))
        .build()
        .map_err(StoreError::ddb)
}
