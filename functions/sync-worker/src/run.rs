//! One run of one account: plan, read, write under the lease, finish.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::dates::{Timezone, shift};
use adtrail_domain::graph_error::Usage;
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::money::Currency;
use adtrail_domain::outcome::{FailureKind, Finish, LinkProgress, PlanDone, RunOutcome, finish};
use adtrail_domain::plan::{SyncCursor, SyncPlan, plan_sync};
use adtrail_meta::GraphError;
use adtrail_store::connections::Connection;
use adtrail_store::lease::LeaseCondition;
use adtrail_store::queue::SyncMessage;
use serde_json::json;

use crate::catalog::entry_of_ad;
use crate::read::{Part, PartRead, Saving};
use crate::stopped::{failed, read_through, stopped};
use crate::{Worker, WorkerError};

mod finish;
mod token;

pub use token::Tokens;

pub const MAX_THUMBNAILS_PER_RUN: usize = 300;
/// Ads that brought leads named per live run.
pub const MAX_ADS_NAMED_PER_RUN: usize = 50;

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
    /// How the run ended ([`RunOutcome::class`]); empty for a stale one.
    pub outcome: &'static str,
    /// The highest rate-limit usage Meta reported to a successful run.
    pub usage_pct: u32,
}

/// How the reading stopped early.
pub(crate) enum Stop {
    Graph(GraphError),
    OutOfTime,
    LostLease,
    Store(adtrail_store::StoreError),
}

/// When a run started, when it stops starting Meta reads, and its batch's
/// opened tokens.
#[derive(Clone, Copy)]
struct RunTimes<'a> {
    started_at: i64,
    stop_reads_at: Instant,
    tokens: &'a Tokens,
}

/// What every write of one run is conditional on, and its times.
struct RunScope {
    cond: LeaseCondition,
    started_at: i64,
    stop_reads_at: Instant,
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
        self.run_with(msg, stop_reads_at, &self.tokens).await
    }

    /// [`Worker::run`], opening tokens through `tokens` (a batch's runs
    /// share them).
    ///
    /// # Errors
    /// [`WorkerError::Store`] when AWS fails; the message is retried.
    pub async fn run_with(
        &self,
        msg: &SyncMessage,
        stop_reads_at: Instant,
        tokens: &Tokens,
    ) -> Result<RunReport, WorkerError> {
        let started_at = self.clock.now_ms();
        let mut report = RunReport::default();
        let Some(link) = self.link_of(msg).await? else {
            report.stale = true;
            return Ok(report);
        };
        // Eventually consistent: a token refused by Meta is checked against
        // a strong read before the ending pauses anything (see `finish`).
        let connection = self
            .store
            .connections()
            .get_connection_as(&link.owner_key, false)
            .await?;
        let token_version = connection
            .as_ref()
            .map(|c| c.token_version.clone())
            .unwrap_or_default();
        let mut last = None;
        let outcome = match self
            .sync(
                msg,
                &link,
                connection.as_ref(),
                RunTimes {
                    started_at,
                    stop_reads_at,
                    tokens,
                },
                (&mut report, &mut last),
            )
            .await
        {
            Ok(outcome) => outcome,
            Err(Stop::LostLease) => lost_lease(&mut report),
            Err(Stop::Store(e)) => return Err(e.into()),
            Err(stop) => stopped(stop),
        };
        let outcome = self
            .finish_with(
                msg,
                (&link, &token_version),
                (last, outcome),
                started_at,
                &mut report,
            )
            .await?;
        report.outcome = outcome.class();
        if let RunOutcome::Ok { usage_pct, .. } = outcome {
            report.usage_pct = usage_pct;
        }
        Ok(report)
    }

    /// The run's link, if the run still holds it. Read eventually first
    /// (half the units): the lease was written seconds before the message
    /// was sent, so a read that misses it, or the link, reads again
    /// strongly before the message is let go.
    pub(crate) async fn link_of(
        &self,
        msg: &SyncMessage,
    ) -> Result<Option<SiteAdAccount>, adtrail_store::StoreError> {
        for consistent in [false, true] {
            let link = self
                .store
                .links()
                .get_link_as(&msg.site_id, &msg.ad_account_id, consistent)
                .await?;
            if let Some(link) = link.filter(|l| l.run_id.as_deref() == Some(msg.run_id.as_str())) {
                return Ok(Some(link));
            }
        }
        Ok(None)
    }

    /// One run: open the token, plan, read and save spend, learn the
    /// catalog, name the ads that brought leads. A reason the run cannot go
    /// on is its outcome, not an error. The last part of spend read is left
    /// in `last`, for the run's ending to write.
    async fn sync(
        &self,
        msg: &SyncMessage,
        link: &SiteAdAccount,
        connection: Option<&Connection>,
        times: RunTimes<'_>,
        (report, last): (&mut RunReport, &mut Option<Part>),
    ) -> Result<RunOutcome, Stop> {
        let RunTimes {
            started_at,
            stop_reads_at,
            tokens,
        } = times;
        let token = match self.open_token(connection, tokens).await {
            Ok(token) => token,
            Err(outcome) => return Ok(outcome),
        };
        let Some((cursor, currency)) = cursor_of(link) else {
            return Ok(failed(
                FailureKind::Unavailable,
                "the account's timezone or currency is not known",
            ));
        };
        let plan = plan_sync(&cursor, started_at);
        let run = RunScope {
            cond: LeaseCondition::Run {
                site_id: msg.site_id.clone(),
                ad_account_id: msg.ad_account_id.clone(),
                run_id: msg.run_id.clone(),
            },
            started_at,
            stop_reads_at,
        };
        let mut usage = Usage::default();
        let mut saving = Saving {
            cond: &run.cond,
            report,
            catalog: BTreeMap::new(),
            read: vec![],
            latest: None,
            unwritten: None,
        };
        let read = self
            .read_range(
                &token,
                link,
                &currency,
                plan.range(),
                stop_reads_at,
                &mut usage,
                &mut saving,
            )
            .await;
        let Saving {
            mut catalog,
            read: parts,
            latest,
            unwritten,
            ..
        } = saving;
        *last = unwritten;
        if let Err(stop) = read {
            return self
                .stopped_reading(&run, &plan, &parts, catalog, stop, report)
                .await;
        }
        let mut thumbnails = HashMap::new();
        if plan.full_catalog() {
            if Instant::now() >= stop_reads_at {
                return self.no_time_for_catalog(&run, &plan, catalog, report).await;
            }
            usage = usage.merge(
                self.list_ads(&token, link, &mut catalog, &mut thumbnails)
                    .await?,
            );
        }
        let catalog_digest = adtrail_domain::catalog::digest(catalog.values());
        // An account's live runs mostly learn what its last one did (the
        // same ads delivering under the same names), and that one saved it
        // all: nothing to merge, so no catalog entry is read.
        if !thumbnails.is_empty() || link.catalog_digest.as_ref() != Some(&catalog_digest) {
            self.save_learnt(&run, catalog, thumbnails, report).await?;
        }
        if matches!(plan, SyncPlan::Live { .. }) && Instant::now() < stop_reads_at {
            self.name_lead_ads(&token, &run.cond, started_at, report)
                .await?;
        }
        Ok(RunOutcome::Ok {
            usage_pct: usage.pct,
            regain_ms: usage.regain_ms,
            plan: match plan {
                SyncPlan::Backfill { next_from, .. } => PlanDone::Backfill { next_from },
                SyncPlan::Live { daily, weekly, .. } => PlanDone::Live {
                    daily,
                    weekly,
                    // Today and yesterday are the live read's days.
                    delivered: latest >= Some(shift(plan.range().until, -1)),
                },
            },
            truncated: parts.iter().any(|p| !p.complete),
            catalog_digest: Some(catalog_digest),
        })
    }

    /// The account's ads, learnt into the catalog with their thumbnails'
    /// URLs; answers the listing's usage.
    async fn list_ads(
        &self,
        token: &str,
        link: &SiteAdAccount,
        catalog: &mut BTreeMap<String, CatalogEntry>,
        thumbnails: &mut HashMap<String, String>,
    ) -> Result<Usage, Stop> {
        let listed = self
            .graph
            .ads(token, &link.ad_account_id, None)
            .await
            .map_err(Stop::Graph)?;
        for mut ad in listed.ads {
            if let Some(url) = ad.thumbnail_url.take() {
                thumbnails.insert(ad.id.clone(), url);
            }
            learn(catalog, entry_of_ad(ad));
        }
        Ok(listed.usage)
    }

    /// The reading stopped: a backfill goes on next time from the first
    /// day not read; anything else is the stop's own outcome.
    async fn stopped_reading(
        &self,
        run: &RunScope,
        plan: &SyncPlan,
        parts: &[PartRead],
        catalog: BTreeMap<String, CatalogEntry>,
        stop: Stop,
        report: &mut RunReport,
    ) -> Result<RunOutcome, Stop> {
        let done = match plan {
            SyncPlan::Backfill { range, .. } => read_through(*range, parts),
            SyncPlan::Live { .. } => None,
        };
        let (Some(done), Stop::OutOfTime | Stop::Graph(_)) = (done, &stop) else {
            return Err(stop);
        };
        self.save_learnt(run, catalog, HashMap::new(), report)
            .await?;
        Ok(RunOutcome::Partial {
            next_from: shift(done, 1),
            stopped: Box::new(stopped(stop)),
        })
    }

    /// The block is read, not the catalog: the next run reads the block's
    /// last day again, and then the catalog.
    async fn no_time_for_catalog(
        &self,
        run: &RunScope,
        plan: &SyncPlan,
        catalog: BTreeMap<String, CatalogEntry>,
        report: &mut RunReport,
    ) -> Result<RunOutcome, Stop> {
        match plan {
            SyncPlan::Backfill { range, .. } if range.since < range.until => {
                self.save_learnt(run, catalog, HashMap::new(), report)
                    .await?;
                Ok(RunOutcome::Partial {
                    next_from: range.until,
                    stopped: Box::new(stopped(Stop::OutOfTime)),
                })
            }
            _ => Err(Stop::OutOfTime),
        }
    }

    /// Saves what the run learnt of the catalog, with the thumbnails it
    /// found, within the run's time.
    async fn save_learnt(
        &self,
        run: &RunScope,
        catalog: BTreeMap<String, CatalogEntry>,
        thumbnails: HashMap<String, String>,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        self.save_catalog(
            &run.cond,
            catalog,
            thumbnails,
            run.started_at,
            run.stop_reads_at,
            report,
        )
        .await
    }
}

/// The outcome of a run whose lease was taken from it.
fn lost_lease(report: &mut RunReport) -> RunOutcome {
    report.lost_lease = true;
    RunOutcome::Failed {
        kind: FailureKind::Unavailable,
        reason: "link lost".into(),
        regain_ms: None,
    }
}

/// Where the account's sync stands, in its own timezone, and its currency.
fn cursor_of(link: &SiteAdAccount) -> Option<(SyncCursor, Currency)> {
    let timezone = Timezone::parse(&link.timezone)?;
    let currency = Currency::parse(&link.currency).ok()?;
    let cursor = SyncCursor {
        timezone,
        last_sync_at: link.last_sync_at,
        last_daily_resync_at: link.last_daily_resync_at,
        last_full_resync_at: link.last_full_resync_at,
        backfill_from: link
            .backfill_from
            .as_deref()
            .and_then(adtrail_domain::dates::parse_date),
    };
    Some((cursor, currency))
}

/// Merges what the run learnt of an ad into the catalog it builds.
pub(crate) fn learn(catalog: &mut BTreeMap<String, CatalogEntry>, learnt: CatalogEntry) {
    catalog
        .entry(learnt.ad_id.clone())
        .or_insert_with(|| CatalogEntry {
            ad_id: learnt.ad_id.clone(),
            ..Default::default()
        })
        .merge(&learnt);
}
