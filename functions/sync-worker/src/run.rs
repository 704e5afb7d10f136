//! One run of one account: plan, read, write under the lease, finish.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use adtrail_domain::dates::{Timezone, day_start};
use adtrail_domain::graph_error::{GraphErrorKind, Usage};
use adtrail_domain::money::Currency;
use adtrail_domain::outcome::{FailureKind, Finish, LinkProgress, PlanDone, RunOutcome, finish};
use adtrail_domain::pixels::ConnectionStatus;
use adtrail_domain::plan::{DateRange, SyncCursor, SyncPlan, plan_sync};
use adtrail_meta::{GraphError, Insights, too_much_data};
use adtrail_store::blobs::thumbnail_key;
use adtrail_store::catalog::CatalogEntry;
use adtrail_store::connections::Connection;
use adtrail_store::links::{LeaseCondition, SiteAdAccount};
use adtrail_store::queue::SyncMessage;
use adtrail_store::seal::Purpose;
use adtrail_store::spend::{RowChange, SpendFigures, SpendRow};
use futures::StreamExt;
use serde_json::json;

use crate::{Worker, WorkerError};

pub const MAX_THUMBNAILS_PER_RUN: usize = 300;
/// Ads that brought leads named per live run.
pub const MAX_ADS_NAMED_PER_RUN: usize = 50;
/// How far back a lead's ad is worth naming.
const LEAD_ADS_WINDOW_MS: i64 = 7 * adtrail_domain::time::DAY_MS;
const THUMBNAIL_CONCURRENCY: usize = 8;

/// What a run did, for tests and logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    /// The message's run no longer held the link: nothing was done.
    pub stale: bool,
    pub rows_written: usize,
    pub rows_dropped: usize,
    pub thumbnails: usize,
    /// Ads that brought leads, named by this run.
    pub ads_named: usize,
    pub lost_lease: bool,
}

/// A range read, split while Meta has too much data.
struct Part {
    range: DateRange,
    rows: Vec<adtrail_meta::SpendRow>,
    complete: bool,
}

/// How the reading stopped early.
enum Stop {
    Graph(GraphError),
    OutOfTime,
    LostLease,
    Store(adtrail_store::StoreError),
}

impl From<adtrail_store::StoreError> for Stop {
    fn from(e: adtrail_store::StoreError) -> Self {
        Stop::Store(e)
    }
}

impl Worker {
    /// Carries out one run, idempotently: a redelivered message whose run
    /// was replaced, or whose link is gone, does nothing.
    ///
    /// # Errors
    /// [`WorkerError::Store`] when AWS fails; the message is retried.
    pub async fn run(
        &self,
        msg: &SyncMessage,
        stop_reads_at: Instant,
    ) -> Result<RunReport, WorkerError> {
        let started_at = self.clock.now_ms();
        let mut report = RunReport::default();
        let Some(link) = self.aws.get_link(&msg.site_id, &msg.ad_account_id).await? else {
            report.stale = true;
            return Ok(report);
        };
        if link.run_id.as_deref() != Some(msg.run_id.as_str()) {
            report.stale = true;
            return Ok(report);
        }
        let connection = self.aws.get_connection(&link.owner_key).await?;
        let token_version = connection
            .as_ref()
            .map(|c| c.token_version.clone())
            .unwrap_or_default();
        let outcome = match self
            .sync(
                msg,
                &link,
                connection.as_ref(),
                started_at,
                stop_reads_at,
                &mut report,
            )
            .await
        {
            Ok(outcome) => outcome,
            Err(Stop::LostLease) => {
                report.lost_lease = true;
                RunOutcome::Failed {
                    kind: FailureKind::Unavailable,
                    reason: "link lost".into(),
                    regain_ms: None,
                }
            }
            Err(Stop::OutOfTime) => RunOutcome::Failed {
                kind: FailureKind::OutOfTime,
                reason: "the run stopped before its Lambda deadline; what it read is saved and the next run reads the range again"
                    .into(),
                regain_ms: None,
            },
            Err(Stop::Graph(e)) => graph_failure(&e),
            Err(Stop::Store(e)) => return Err(e.into()),
        };
        self.finish(msg, &link, &token_version, &outcome, started_at)
            .await?;
        Ok(report)
    }

    async fn sync(
        &self,
        msg: &SyncMessage,
        link: &SiteAdAccount,
        connection: Option<&Connection>,
        started_at: i64,
        stop_reads_at: Instant,
        report: &mut RunReport,
    ) -> Result<RunOutcome, Stop> {
        let Some(connection) = connection.filter(|c| c.status == ConnectionStatus::Active) else {
            return Ok(RunOutcome::Failed {
                kind: FailureKind::Token,
                reason: "the connection's token was marked invalid".into(),
                regain_ms: None,
            });
        };
        let token = match self
            .aws
            .unseal(
                &connection.owner_key,
                Purpose::MetaConnection,
                &connection.sealed_token,
            )
            .await
        {
            Ok(token) => token,
            Err(_) => {
                return Ok(RunOutcome::Failed {
                    kind: FailureKind::SealingKey,
                    reason: "KMS could not open the connection's token".into(),
                    regain_ms: None,
                });
            }
        };
        let (Some(tz), Ok(currency)) = (
            Timezone::parse(&link.timezone),
            Currency::parse(&link.currency),
        ) else {
            return Ok(RunOutcome::Failed {
                kind: FailureKind::Unavailable,
                reason: "the account's timezone or currency is not known".into(),
                regain_ms: None,
            });
        };
        let cursor = SyncCursor {
            timezone: tz,
            last_sync_at: link.last_sync_at,
            last_daily_resync_at: link.last_daily_resync_at,
            last_full_resync_at: link.last_full_resync_at,
            backfill_from: link
                .backfill_from
                .as_deref()
                .and_then(adtrail_domain::dates::parse_date),
        };
        let plan = plan_sync(&cursor, started_at);
        let cond = LeaseCondition::Run {
            site_id: msg.site_id.clone(),
            ad_account_id: msg.ad_account_id.clone(),
            run_id: msg.run_id.clone(),
        };
        let mut usage = Usage::default();
        let mut parts = vec![];
        self.read_range(
            &token,
            link,
            &currency,
            plan.range(),
            stop_reads_at,
            &mut usage,
            &mut parts,
        )
        .await?;

        let mut catalog: BTreeMap<String, CatalogEntry> = BTreeMap::new();
        for part in &parts {
            self.save_part(&cond, part, report).await?;
            for row in &part.rows {
                let entry = catalog
                    .entry(row.ad_id.clone())
                    .or_insert_with(|| CatalogEntry {
                        ad_id: row.ad_id.clone(),
                        ..Default::default()
                    });
                entry.merge(&CatalogEntry {
                    ad_id: row.ad_id.clone(),
                    ad_name: row.ad_name.clone(),
                    adset_id: row.adset_id.clone(),
                    adset_name: row.adset_name.clone(),
                    campaign_id: row.campaign_id.clone(),
                    campaign_name: row.campaign_name.clone(),
                    ..Default::default()
                });
            }
        }
        let mut thumbnails = HashMap::new();
        if plan.full_catalog() {
            if Instant::now() >= stop_reads_at {
                return Err(Stop::OutOfTime);
            }
            let listed = self
                .graph
                .ads(&token, &link.ad_account_id, None)
                .await
                .map_err(Stop::Graph)?;
            usage = usage.merge(listed.usage);
            for ad in listed.ads {
                let entry = catalog
                    .entry(ad.id.clone())
                    .or_insert_with(|| CatalogEntry {
                        ad_id: ad.id.clone(),
                        ..Default::default()
                    });
                entry.merge(&CatalogEntry {
                    ad_id: ad.id.clone(),
                    ad_name: ad.name,
                    adset_id: ad.adset_id,
                    adset_name: ad.adset_name,
                    campaign_id: ad.campaign_id,
                    campaign_name: ad.campaign_name,
                    ad_status: ad.effective_status,
                    creative_type: ad.creative_type,
                    ..Default::default()
                });
                if let Some(url) = ad.thumbnail_url {
                    thumbnails.insert(ad.id, url);
                }
            }
        }
        self.save_catalog(&cond, catalog, thumbnails, started_at, report)
            .await?;
        if matches!(plan, SyncPlan::Live { .. }) && Instant::now() < stop_reads_at {
            self.name_lead_ads(&token, &cond, started_at, report)
                .await?;
        }

        let truncated = parts.iter().any(|p| !p.complete);
        Ok(RunOutcome::Ok {
            usage_pct: usage.pct,
            regain_ms: usage.regain_ms,
            plan: match plan {
                SyncPlan::Backfill { next_from, .. } => PlanDone::Backfill { next_from },
                SyncPlan::Live { daily, weekly, .. } => PlanDone::Live { daily, weekly },
            },
            truncated,
        })
    }

    /// A range's spend, split in halves while Meta has more rows than one
    /// call reads, down to single days. A day still over the cap keeps what
    /// came (`complete: false`): nothing is inferred from what it lacks.
    #[allow(clippy::too_many_arguments)]
    async fn read_range(
        &self,
        token: &str,
        link: &SiteAdAccount,
        currency: &Currency,
        range: DateRange,
        stop_reads_at: Instant,
        usage: &mut Usage,
        parts: &mut Vec<Part>,
    ) -> Result<(), Stop> {
        let mut pending = vec![range];
        while let Some(range) = pending.pop() {
            if Instant::now() >= stop_reads_at {
                return Err(Stop::OutOfTime);
            }
            let result = self
                .graph
                .insights(token, &link.ad_account_id, currency, range)
                .await;
            let (rows, complete) = match result {
                Ok(Insights {
                    rows,
                    complete,
                    usage: u,
                }) => {
                    *usage = usage.merge(u);
                    (rows, complete)
                }
                Err(e) if too_much_data(&e) => (vec![], false),
                Err(e) => return Err(Stop::Graph(e)),
            };
            match (complete, range.halves()) {
                (false, Some((first, second))) => {
                    // Read the earlier half first.
                    pending.push(second);
                    pending.push(first);
                }
                _ => parts.push(Part {
                    range,
                    rows,
                    complete,
                }),
            }
        }
        Ok(())
    }

    /// Writes one part's rows, and, when Meta gave the whole part, drops the
    /// stored rows Meta no longer lists (a day corrected to zero). Rows that
    /// did not change are not written again.
    async fn save_part(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        let first = day_start(part.range.since);
        let last = day_start(part.range.until);
        let (stored, _) = self
            .aws
            .spend_rows(
                cond.site_id(),
                cond.ad_account_id(),
                first,
                last,
                usize::MAX,
            )
            .await?;
        let mut stored: HashMap<(i64, String), SpendRow> = stored
            .into_iter()
            .map(|r| ((r.day_start, r.ad_id.clone()), r))
            .collect();
        let mut changes = vec![];
        let mut fresh: BTreeMap<(i64, String), SpendFigures> = BTreeMap::new();
        for row in &part.rows {
            // Meta may list an ad-day twice across pages: the last one wins.
            fresh.insert(
                (day_start(row.date), row.ad_id.clone()),
                SpendFigures {
                    spend_cents: row.spend_cents,
                    impressions: row.impressions,
                    clicks: row.clicks,
                },
            );
        }
        for ((day, ad), figures) in fresh {
            let old = stored.remove(&(day, ad.clone()));
            if old.as_ref().is_some_and(|o| o.figures == figures) {
                continue;
            }
            changes.push(RowChange::Put {
                row: SpendRow {
                    day_start: day,
                    ad_id: ad,
                    figures,
                    updated_at: self.clock.now_ms(),
                },
                old: old.map(|o| o.figures),
            });
        }
        report.rows_written += changes.len();
        if part.complete {
            report.rows_dropped += stored.len();
            changes.extend(stored.into_values().map(|row| RowChange::Delete { row }));
        }
        if !self.aws.write_spend(cond, &changes).await? {
            return Err(Stop::LostLease);
        }
        Ok(())
    }

    /// Merges what the run learnt into the catalog (only entries that
    /// change), then copies thumbnails the catalog lacks.
    async fn save_catalog(
        &self,
        cond: &LeaseCondition,
        learnt: BTreeMap<String, CatalogEntry>,
        thumbnails: HashMap<String, String>,
        now: i64,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        let stored = self.aws.site_catalog(cond.site_id()).await?;
        let mut changed = vec![];
        let mut need_thumbnail = vec![];
        for (ad, entry) in learnt {
            let current = stored.get(&ad);
            let mut merged = current.cloned().unwrap_or_else(|| CatalogEntry {
                ad_id: ad.clone(),
                ..Default::default()
            });
            merged.merge(&entry);
            let mine =
                current.and_then(|c| c.ad_account_id.as_deref()) == Some(cond.ad_account_id());
            if current != Some(&merged) || !mine {
                changed.push(entry);
            }
            if current.is_none_or(|c| c.thumbnail_key.is_none())
                && let Some(url) = thumbnails.get(&ad)
            {
                need_thumbnail.push((ad, url.clone()));
            }
        }
        if !self.aws.upsert_catalog(cond, &changed, now).await? {
            return Err(Stop::LostLease);
        }
        need_thumbnail.truncate(MAX_THUMBNAILS_PER_RUN);
        let copies = futures::stream::iter(need_thumbnail)
            .map(|(ad, url)| async move {
                let Some(thumb) = self.graph.thumbnail(&url).await else {
                    return Ok(None);
                };
                let key = thumbnail_key(cond.site_id(), &ad);
                self.aws
                    .put_thumbnail(&key, thumb.bytes, &thumb.content_type)
                    .await?;
                Ok::<_, adtrail_store::StoreError>(Some((ad, key)))
            })
            .buffer_unordered(THUMBNAIL_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let mut stored = vec![];
        for copy in copies {
            stored.extend(copy?);
        }
        // The catalog learns them all at once: one transaction per 99.
        if !self.aws.set_thumbnails(cond, &stored).await? {
            return Err(Stop::LostLease);
        }
        report.thumbnails += stored.len();
        Ok(())
    }

    /// Names the ads that brought the site leads in the last 7 days and have
    /// no name yet, at most [`MAX_ADS_NAMED_PER_RUN`]: Meta is asked for them
    /// by id through this run's account, so an ad of another account never
    /// comes back, and an ad the catalog files under another account is
    /// left to that account's runs. Best effort: Meta failing here leaves
    /// the run's outcome as it was.
    async fn name_lead_ads(
        &self,
        token: &str,
        cond: &LeaseCondition,
        now: i64,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        let site = cond.site_id();
        let ads = self
            .aws
            .recent_lead_ads(site, now - LEAD_ADS_WINDOW_MS, 1_000)
            .await?;
        if ads.is_empty() {
            return Ok(());
        }
        let known: HashMap<String, CatalogEntry> = self
            .aws
            .catalog_entries(site, &ads)
            .await?
            .into_iter()
            .map(|e| (e.ad_id.clone(), e))
            .collect();
        let unnamed: Vec<String> = ads
            .into_iter()
            .filter(|ad| match known.get(ad) {
                None => true,
                Some(e) => {
                    e.ad_name.is_none()
                        && e.ad_account_id
                            .as_deref()
                            .is_none_or(|a| a == cond.ad_account_id())
                }
            })
            .take(MAX_ADS_NAMED_PER_RUN)
            .collect();
        if unnamed.is_empty() {
            return Ok(());
        }
        let listed = match self
            .graph
            .ads(token, cond.ad_account_id(), Some(&unnamed))
            .await
        {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(error = %error, "could not name the ads that brought leads");
                return Ok(());
            }
        };
        let entries: Vec<CatalogEntry> = listed
            .ads
            .into_iter()
            .filter(|ad| unnamed.contains(&ad.id) && ad.name.is_some())
            .map(|ad| CatalogEntry {
                ad_id: ad.id,
                ad_name: ad.name,
                adset_id: ad.adset_id,
                adset_name: ad.adset_name,
                campaign_id: ad.campaign_id,
                campaign_name: ad.campaign_name,
                ad_status: ad.effective_status,
                creative_type: ad.creative_type,
                ..Default::default()
            })
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        if !self.aws.upsert_catalog(cond, &entries, now).await? {
            return Err(Stop::LostLease);
        }
        report.ads_named += entries.len();
        Ok(())
    }

    /// Records the outcome on the account (if the run still holds it), and
    /// what others must know on the bus.
    async fn finish(
        &self,
        msg: &SyncMessage,
        link: &SiteAdAccount,
        token_version: &str,
        outcome: &RunOutcome,
        started_at: i64,
    ) -> Result<(), WorkerError> {
        let now = self.clock.now_ms();
        let current = self.aws.get_link(&msg.site_id, &msg.ad_account_id).await?;
        let Some(current) = current else {
            // Unlinked while the run wrote: take back whatever it wrote
            // after the unlink's own purge ran.
            self.aws
                .mark_purge(&msg.site_id, &msg.ad_account_id, now)
                .await?;
            return Ok(());
        };
        if current.run_id.as_deref() != Some(msg.run_id.as_str()) {
            // A newer run holds the account: this one's ending is not the account's.
            return Ok(());
        }
        let connection = self.aws.get_connection(&link.owner_key).await?;
        let progress = LinkProgress {
            sync_state: current.sync_state,
            failures: current.failures,
            sync_requested: current.sync_requested,
            token_still_stored: connection
                .as_ref()
                .is_some_and(|c| c.token_version == token_version),
        };
        match finish(progress, outcome, started_at, now) {
            Finish::Update(update) => {
                if self
                    .aws
                    .finish_run(&msg.site_id, &msg.ad_account_id, &msg.run_id, &update)
                    .await?
                    && let (RunOutcome::Failed { .. }, Some(error)) = (outcome, &update.last_error)
                {
                    self.put_event(
                        "AccountSyncFailed",
                        json!({"siteId": msg.site_id, "adAccountId": msg.ad_account_id, "lastError": error, "nextSyncAt": update.next_sync_at}),
                    )
                    .await;
                }
            }
            Finish::PauseConnection { last_error } => {
                if self
                    .aws
                    .stop_connection(&link.owner_key, token_version, &last_error, now)
                    .await?
                {
                    self.put_event(
                        "ConnectionTokenInvalid",
                        json!({"ownerKey": link.owner_key, "lastError": last_error}),
                    )
                    .await;
                } else {
                    // A new token was stored between the checks: retry now.
                    let retry = finish(
                        LinkProgress {
                            token_still_stored: false,
                            ..progress
                        },
                        outcome,
                        started_at,
                        now,
                    );
                    if let Finish::Update(update) = retry {
                        self.aws
                            .finish_run(&msg.site_id, &msg.ad_account_id, &msg.run_id, &update)
                            .await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Puts an event on the bus; a bus failure is logged, never fails a run
    /// whose outcome is already stored.
    async fn put_event(&self, detail_type: &str, detail: serde_json::Value) {
        if let Err(error) = self.aws.put_event(detail_type, &detail).await {
            tracing::warn!(detail_type, error = %error, "could not put the event on the bus");
        }
    }
}

/// A Graph failure as a run outcome.
fn graph_failure(e: &GraphError) -> RunOutcome {
    let kind = match e.kind {
        GraphErrorKind::TokenInvalid => FailureKind::Token,
        GraphErrorKind::Throttled => FailureKind::Throttled,
        GraphErrorKind::Permission => FailureKind::Permission,
        GraphErrorKind::TooMuchData | GraphErrorKind::Transient | GraphErrorKind::Other => {
            FailureKind::Unavailable
        }
    };
    let reason = match e.code {
        Some(code) => format!("Meta error {code}: {}", e.message),
        None if e.status > 0 => format!("Meta answered HTTP {}", e.status),
        None => e.message.clone(),
    };
    RunOutcome::Failed {
        kind,
        reason,
        regain_ms: e.regain_ms,
    }
}
