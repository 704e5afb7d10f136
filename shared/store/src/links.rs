//! Links between a site and a Meta ad account (`SiteAdAccount`): who linked
//! it, its sync cursor and state, and the run that holds it.
//!
//! A run holds a link while the link's `runId` is its own. Every write a run
//! makes is conditional on that (here, and through [`LeaseCondition`] in the
//! spend and catalog writes), so an unlinked account or a run replaced after
//! its lease takes no write.

use adtrail_domain::outcome::{Change, LinkUpdate, SyncState};
use adtrail_domain::plan::{LEASE_MS, MAX_LINKS_PER_CONNECTION, MAX_LINKS_PER_SITE};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValue, TransactWriteItem, Update,
};

use crate::attr::{Item, get_bool, get_n, get_s, n, need_s, s};
use crate::connections::ListedAccount;
use crate::keys::*;
use crate::write::{applied, transaction_failed_at};
use crate::{Aws, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteAdAccount {
    pub site_id: String,
    pub ad_account_id: String,
    pub owner_key: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub sync_state: SyncState,
    pub last_sync_at: Option<i64>,
    pub last_daily_resync_at: Option<i64>,
    pub last_full_resync_at: Option<i64>,
    pub backfill_from: Option<String>,
    pub failures: u32,
    pub last_error: Option<String>,
    pub run_id: Option<String>,
    pub sync_requested: bool,
    /// `None` while paused (a dead token, an account no longer granted).
    pub next_sync_at: Option<i64>,
    pub created_at: i64,
}

impl SiteAdAccount {
    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        Ok(Self {
            site_id: need_s(item, "siteId")?,
            ad_account_id: need_s(item, "adAccountId")?,
            owner_key: need_s(item, "ownerKey")?,
            name: need_s(item, "name")?,
            currency: need_s(item, "currency")?,
            timezone: need_s(item, "timezone")?,
            sync_state: get_s(item, "syncState")
                .and_then(SyncState::parse)
                .unwrap_or(SyncState::Backfill),
            last_sync_at: get_n(item, "lastSyncAt"),
            last_daily_resync_at: get_n(item, "lastDailyResyncAt"),
            last_full_resync_at: get_n(item, "lastFullResyncAt"),
            backfill_from: get_s(item, "backfillFrom").map(str::to_owned),
            failures: get_n(item, "failures").unwrap_or(0).clamp(0, 1_000) as u32,
            last_error: get_s(item, "lastError").map(str::to_owned),
            run_id: get_s(item, "runId").map(str::to_owned),
            sync_requested: get_bool(item, "syncRequested"),
            next_sync_at: get_n(item, NEXT_SYNC_AT),
            created_at: get_n(item, "createdAt").unwrap_or(0),
        })
    }

    /// Synced once its first backfill has ended: its spend is known.
    pub fn synced(&self) -> bool {
        self.last_sync_at.is_some()
    }
}

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

/// The condition every write of a sync run (or of a purge) carries.
#[derive(Debug, Clone)]
pub enum LeaseCondition {
    /// The run still holds the link.
    Run {
        site_id: String,
        ad_account_id: String,
        run_id: String,
    },
    /// The account is not linked to the site (a purge after an unlink).
    Unlinked {
        site_id: String,
        ad_account_id: String,
    },
}

impl LeaseCondition {
    pub fn site_id(&self) -> &str {
        match self {
            Self::Run { site_id, .. } | Self::Unlinked { site_id, .. } => site_id,
        }
    }
    pub fn ad_account_id(&self) -> &str {
        match self {
            Self::Run { ad_account_id, .. } | Self::Unlinked { ad_account_id, .. } => ad_account_id,
        }
    }

    /// The `ConditionCheck` item that goes first in every transaction.
    pub fn check(&self, table: &str) -> Result<TransactWriteItem, StoreError> {
        let builder = ConditionCheck::builder()
            .table_name(table)
            .key(PK, s(site_pk(self.site_id())))
            .key(SK, s(link_sk(self.ad_account_id())));
        let check = match self {
            Self::Run { run_id, .. } => builder
                .condition_expression("runId = :run")
                .expression_attribute_values(":run", s(run_id)),
            Self::Unlinked { .. } => builder.condition_expression("attribute_not_exists(pk)"),
        }
        .build()
        .map_err(StoreError::ddb)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }
}

fn key(site: &str, account: &str) -> [(String, AttributeValue); 2] {
    [
        (PK.into(), s(site_pk(site))),
        (SK.into(), s(link_sk(account))),
    ]
}

impl Aws {
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
        let mut item: Item = key(site, id).into_iter().collect();
        for (k, v) in [
            ("siteId", site),
            ("adAccountId", id),
            ("ownerKey", owner),
            ("name", &account.name),
            ("currency", &account.currency),
            ("timezone", &account.timezone),
            ("syncState", SyncState::Backfill.as_str()),
        ] {
            item.insert(k.into(), s(v));
        }
        item.insert(GSI1_PK.into(), s(owner_pk(owner)));
        item.insert(GSI1_SK.into(), s(owner_link_sk(site, id)));
        item.insert(DUE_SHARD.into(), s(due_shard(site, id)));
        item.insert(NEXT_SYNC_AT.into(), n(now));
        item.insert("createdAt".into(), n(now));
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
        let count = |pk: String, sk: &str, max: usize| {
            Update::builder()
                .table_name(t)
                .key(PK, s(pk))
                .key(SK, s(sk))
                .update_expression("ADD linkCount :one")
                .condition_expression("attribute_exists(pk) AND (attribute_not_exists(linkCount) OR linkCount < :max)")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":max", n(max))
                .build()
                .map_err(StoreError::ddb)
        };
        let stop_purge = Delete::builder()
            .table_name(t)
            .key(PK, s(purge_pk(site)))
            .key(SK, s(id))
            .build()
            .map_err(StoreError::ddb)?;
        let res = self
            .ddb
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().put(put_link).build())
            .transact_items(TransactWriteItem::builder().put(put_claim).build())
            .transact_items(
                TransactWriteItem::builder()
                    .update(count(site_pk(site), SITE_SK, MAX_LINKS_PER_SITE)?)
                    .build(),
            )
            .transact_items(
                TransactWriteItem::builder()
                    .update(count(
                        owner_pk(owner),
                        CONNECTION_SK,
                        MAX_LINKS_PER_CONNECTION,
                    )?)
                    .build(),
            )
            .transact_items(TransactWriteItem::builder().delete(stop_purge).build())
            .send()
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
        let Some(link) = self.get_link(site, account).await? else {
            return Ok(false);
        };
        let t = &self.names.table;
        let delete_link = Delete::builder()
            .table_name(t)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(pk)")
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
        let mut tx = self
            .ddb
            .transact_write_items()
            .transact_items(TransactWriteItem::builder().delete(delete_link).build())
            .transact_items(TransactWriteItem::builder().delete(delete_claim).build())
            .transact_items(
                TransactWriteItem::builder()
                    .update(uncount(site_pk(site), SITE_SK)?)
                    .build(),
            )
            .transact_items(TransactWriteItem::builder().put(purge).build());
        if self.get_connection(&link.owner_key).await?.is_some() {
            tx = tx.transact_items(
                TransactWriteItem::builder()
                    .update(uncount(owner_pk(&link.owner_key), CONNECTION_SK)?)
                    .build(),
            );
        }
        match tx.send().await {
            Ok(_) => Ok(true),
            Err(e) if transaction_failed_at(&e) == Some(0) => Ok(false),
            Err(e) => Err(StoreError::ddb(e)),
        }
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
        let item = self.read_item(site_pk(site), &link_sk(account)).await?;
        item.as_ref().map(SiteAdAccount::from_item).transpose()
    }

    /// A site's links (at most [`MAX_LINKS_PER_SITE`], so one page).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_links(&self, site: &str) -> Result<Vec<SiteAdAccount>, StoreError> {
        let out = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .expression_attribute_values(":pk", s(site_pk(site)))
            .expression_attribute_values(":prefix", s(LINK_SK_PREFIX))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        out.items().iter().map(SiteAdAccount::from_item).collect()
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
            true
        })
        .await?;
        Ok(items)
    }

    /// Links whose next sync has come, `per_shard` at most from each shard
    /// of the `due` index. Answers `(siteId, adAccountId)` pairs, and whether
    /// a shard may hold more.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn due_links(
        &self,
        now: i64,
        per_shard: i32,
    ) -> Result<(Vec<(String, String)>, bool), StoreError> {
        let queries = (0..DUE_SHARDS).map(|shard| {
            self.ddb
                .query()
                .table_name(&self.names.table)
                .index_name(DUE_INDEX)
                .key_condition_expression("dueShard = :shard AND nextSyncAt <= :now")
                .expression_attribute_values(":shard", s(due_shard_n(shard)))
                .expression_attribute_values(":now", n(now))
                .limit(per_shard)
                .send()
        });
        let mut due = vec![];
        let mut more = false;
        for out in futures::future::join_all(queries).await {
            let out = out.map_err(StoreError::ddb)?;
            more |= out.last_evaluated_key.is_some();
            for item in out.items() {
                let (Some(pk), Some(sk)) = (get_s(item, PK), get_s(item, SK)) else {
                    continue;
                };
                if let Some((site, acct)) = parse_link_keys(pk, sk) {
                    due.push((site.to_owned(), acct.to_owned()));
                }
            }
        }
        Ok((due, more))
    }

    /// Takes a due link for a new run: succeeds only while its next sync
    /// has come (so two dispatchers never both take it). A previous run
    /// still holding it is recorded as `RUN_TIMEOUT`. Answers whether this
    /// call took it.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn lease_link(
        &self,
        site: &str,
        account: &str,
        run_id: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression(
                "attribute_exists(pk) AND attribute_exists(dueShard) AND nextSyncAt <= :now",
            )
            .update_expression("SET runId = :run, runStartedAt = :now, nextSyncAt = :until")
            .expression_attribute_values(":run", s(run_id))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":until", n(now + LEASE_MS))
            .return_values(ReturnValue::UpdatedOld)
            .send()
            .await;
        let Some(out) = applied(res)? else {
            return Ok(false);
        };
        let old = out.attributes.unwrap_or_default();
        if get_s(&old, "runId").is_some() {
            // The run before never finished: say so. Its writes are refused
            // from here on, since the link has a new run.
            self.ddb
                .update_item()
                .table_name(&self.names.table)
                .set_key(Some(key(site, account).into_iter().collect()))
                .condition_expression("runId = :run")
                .update_expression("SET lastError = :err")
                .expression_attribute_values(":run", s(run_id))
                .expression_attribute_values(
                    ":err",
                    s(adtrail_domain::error_codes::last_error(
                        adtrail_domain::error_codes::LastErrorCode::RunTimeout,
                        "the previous sync did not finish",
                    )),
                )
                .send()
                .await
                .map_err(StoreError::ddb)?;
        }
        Ok(true)
    }

    /// Records how a run ended, if it still holds the link. Answers whether
    /// it did.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn finish_run(
        &self,
        site: &str,
        account: &str,
        run_id: &str,
        u: &LinkUpdate,
    ) -> Result<bool, StoreError> {
        let mut set = vec![
            "nextSyncAt = :next",
            "syncState = :state",
            "failures = :failures",
        ];
        let mut remove = vec!["runId", "syncRequested", "runStartedAt"];
        let mut req = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("runId = :run")
            .expression_attribute_values(":run", s(run_id))
            .expression_attribute_values(":next", n(u.next_sync_at))
            .expression_attribute_values(":state", s(u.sync_state.as_str()))
            .expression_attribute_values(":failures", n(u.failures));
        match &u.last_error {
            Some(e) => {
                set.push("lastError = :err");
                req = req.expression_attribute_values(":err", s(e));
            }
            None => remove.push("lastError"),
        }
        match u.backfill_from {
            Change::Set(d) => {
                set.push("backfillFrom = :from");
                req = req.expression_attribute_values(":from", s(d.to_string()));
            }
            Change::Clear => remove.push("backfillFrom"),
            Change::Keep => {}
        }
        for (field, value, placeholder) in [
            ("lastSyncAt", u.last_sync_at, ":last"),
            ("lastDailyResyncAt", u.last_daily_resync_at, ":daily"),
            ("lastFullResyncAt", u.last_full_resync_at, ":full"),
        ] {
            if let Some(v) = value {
                set.push(match field {
                    "lastSyncAt" => "lastSyncAt = :last",
                    "lastDailyResyncAt" => "lastDailyResyncAt = :daily",
                    _ => "lastFullResyncAt = :full",
                });
                req = req.expression_attribute_values(placeholder, n(v));
            }
        }
        let expr = format!("SET {} REMOVE {}", set.join(", "), remove.join(", "));
        Ok(applied(req.update_expression(expr).send().await)?.is_some())
    }

    /// Stops a link until its connection gets a usable token again: out of
    /// the due index, its run released, `syncState: error`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn pause_link(
        &self,
        site: &str,
        account: &str,
        last_error: &str,
    ) -> Result<(), StoreError> {
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(pk)")
            .update_expression(
                "SET syncState = :error, lastError = :err REMOVE runId, syncRequested, runStartedAt, nextSyncAt, dueShard",
            )
            .expression_attribute_values(":error", s(SyncState::Error.as_str()))
            .expression_attribute_values(":err", s(last_error))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }

    /// Puts a paused link back in the due index, due now.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn resume_link(&self, link: &SiteAdAccount, now: i64) -> Result<(), StoreError> {
        let state = if link.synced() {
            SyncState::Live
        } else {
            SyncState::Backfill
        };
        let res = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(&link.site_id, &link.ad_account_id).into_iter().collect()))
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(dueShard)")
            .update_expression("SET syncState = :state, nextSyncAt = :now, dueShard = :shard, failures = :zero REMOVE lastError")
            .expression_attribute_values(":state", s(state.as_str()))
            .expression_attribute_values(":now", n(now))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":shard", s(due_shard(&link.site_id, &link.ad_account_id)))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }

    /// Asks for a sync of one link now, or right after the run holding it,
    /// overriding a back-off. A paused link stays paused.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn request_sync(
        &self,
        site: &str,
        account: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        let idle = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(dueShard) AND attribute_not_exists(runId)")
            .update_expression("SET nextSyncAt = :now")
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        if applied(idle)?.is_some() {
            return Ok(());
        }
        let busy = self
            .ddb
            .update_item()
            .table_name(&self.names.table)
            .set_key(Some(key(site, account).into_iter().collect()))
            .condition_expression("attribute_exists(runId)")
            .update_expression("SET syncRequested = :yes")
            .expression_attribute_values(":yes", AttributeValue::Bool(true))
            .send()
            .await;
        applied(busy)?;
        Ok(())
    }
}

impl Aws {
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
