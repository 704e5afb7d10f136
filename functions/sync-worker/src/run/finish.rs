//! The end of a run: its outcome recorded on the account (if the run
//! still holds it: the domain's `finish` decides, the store records), and
//! what others must know put on the bus.

use super::*;
use adtrail_store::lease::Seen;
use adtrail_store::spend::SpendWrite;

/// What a run's ending is made from, besides the account as read.
#[derive(Clone, Copy)]
struct Ending<'a> {
    msg: &'a SyncMessage,
    link: &'a SiteAdAccount,
    token_version: &'a str,
    outcome: &'a RunOutcome,
    started_at: i64,
    now: i64,
}

impl Worker {
    /// Writes the run's last part of spend (`last`, if any) and ends the
    /// run; answers the outcome, which a lease lost on that write changes.
    ///
    /// A run that went well ends in the part's last transaction: its update
    /// of the link, which checks the lease anyway, records the ending too
    /// (decided from the link as that write reads it, strongly), so the
    /// link is written once, not twice, and not read again. When that
    /// cannot be (the run stopped early, or the write was refused: a sync
    /// asked for since its read, rows another execution wrote), the part is
    /// written on its own and the run ended by [`Worker::finish`].
    pub(crate) async fn finish_with(
        &self,
        msg: &SyncMessage,
        (link, token_version): (&SiteAdAccount, &str),
        (last, outcome): (Option<Part>, RunOutcome),
        started_at: i64,
        report: &mut RunReport,
    ) -> Result<RunOutcome, WorkerError> {
        let mut outcome = outcome;
        if let Some(part) = last.filter(|_| !report.lost_lease) {
            let cond = LeaseCondition::Run {
                site_id: msg.site_id.clone(),
                ad_account_id: msg.ad_account_id.clone(),
                run_id: msg.run_id.clone(),
            };
            let mut written = false;
            if matches!(outcome, RunOutcome::Ok { .. }) {
                let now = self.clock.now_ms();
                let decide = |current: &SiteAdAccount| {
                    let ours = current.run_id.as_deref() == Some(msg.run_id.as_str());
                    let (progress, seen) = self.progress_of(current, true);
                    match (ours, finish(progress, &outcome, started_at, now)) {
                        (true, Finish::Update(update)) => Some((update, seen)),
                        _ => None,
                    }
                };
                match self.save_part_ending(&cond, &part, report, &decide).await {
                    Ok(SpendWrite::Ended) => return Ok(outcome),
                    Ok(SpendWrite::Written) => written = true,
                    Ok(SpendWrite::Stale | SpendWrite::LostLease) => {}
                    Err(Stop::Store(e)) => return Err(e.into()),
                    Err(stop) => outcome = stopped(stop),
                }
            }
            if !written {
                match self.save_part(&cond, &part, report).await {
                    Ok(()) => {}
                    Err(Stop::LostLease) => outcome = lost_lease(report),
                    Err(Stop::Store(e)) => return Err(e.into()),
                    Err(stop) => outcome = stopped(stop),
                }
            }
        }
        self.finish(msg, link, token_version, &outcome, started_at)
            .await?;
        Ok(outcome)
    }

    /// Where the account's schedule stands, as `current` (the account as
    /// read) has it, for the domain's `finish`, and as the ending's
    /// conditions must find it.
    fn progress_of(
        &self,
        current: &SiteAdAccount,
        token_still_stored: bool,
    ) -> (LinkProgress, Seen) {
        let progress = LinkProgress {
            sync_state: current.sync_state,
            failures: current.failures,
            sync_requested: current.sync_requested,
            token_still_stored,
            leased_next: current.next_sync_at,
            lease_ms: current.lease_ms,
            interval: self.interval,
            quiet_interval: self.quiet_interval,
        };
        let seen = Seen {
            next_sync_at: current.next_sync_at,
            sync_requested: current.sync_requested,
            slot: current.slot,
        };
        (progress, seen)
    }

    /// Records the outcome on the account (if the run still holds it), and
    /// what others must know on the bus.
    ///
    /// The account is read eventually first (half the units). What such a
    /// read can miss fails the ending's condition (the run's lease, no sync
    /// asked for since the read), and the account is then read strongly and
    /// ended again; a read that does not show the run, or a refused token,
    /// is read strongly before anything is decided.
    pub(crate) async fn finish(
        &self,
        msg: &SyncMessage,
        link: &SiteAdAccount,
        token_version: &str,
        outcome: &RunOutcome,
        started_at: i64,
    ) -> Result<(), WorkerError> {
        let ending = Ending {
            msg,
            link,
            token_version,
            outcome,
            started_at,
            now: self.clock.now_ms(),
        };
        for consistent in [false, true, true] {
            let current = self
                .store
                .links()
                .get_link_as(&msg.site_id, &msg.ad_account_id, consistent)
                .await?;
            let ours = current
                .as_ref()
                .is_some_and(|c| c.run_id.as_deref() == Some(msg.run_id.as_str()));
            if !consistent && (!ours || outcome.token_refused()) {
                continue;
            }
            if self.end(ending, current).await? {
                return Ok(());
            }
        }
        Err(adtrail_store::StoreError::Condition(
            "a sync was asked for at each try of the run's ending",
        )
        .into())
    }

    /// The ending as `current` (the account as read) makes it. Answers
    /// `false` when the account changed since the read.
    async fn end(
        &self,
        ending: Ending<'_>,
        current: Option<SiteAdAccount>,
    ) -> Result<bool, WorkerError> {
        let Ending {
            msg,
            link,
            token_version,
            outcome,
            started_at,
            now,
        } = ending;
        let Some(current) = current else {
            // Unlinked while the run wrote: take back whatever it wrote
            // after the unlink's own purge ran.
            self.store
                .spend()
                .mark_purge(&msg.site_id, &msg.ad_account_id, now)
                .await?;
            return Ok(true);
        };
        if current.run_id.as_deref() != Some(msg.run_id.as_str()) {
            // A newer run holds the account: this one's ending is not the account's.
            return Ok(true);
        }
        // Only a refused token asks whether it is still the stored one: no
        // other ending reads the connection again.
        let token_still_stored = if outcome.token_refused() {
            self.store
                .connections()
                .get_connection(&link.owner_key)
                .await?
                .is_some_and(|c| c.token_version == token_version)
        } else {
            true
        };
        let (progress, seen) = self.progress_of(&current, token_still_stored);
        match finish(progress, outcome, started_at, now) {
            Finish::Update(update) => self.record_update(msg, outcome, &update, seen).await,
            Finish::PauseConnection { last_error } => {
                if self
                    .store
                    .connections()
                    .stop_connection(&link.owner_key, token_version, &last_error, now)
                    .await?
                {
                    self.put_event(
                        "ConnectionTokenInvalid",
                        json!({"ownerKey": link.owner_key, "lastError": last_error}),
                    )
                    .await;
                    return Ok(true);
                }
                // A new token was stored between the checks: retry now.
                let retry = LinkProgress {
                    token_still_stored: false,
                    ..progress
                };
                match finish(retry, outcome, started_at, now) {
                    Finish::Update(update) => Ok(self
                        .store
                        .links()
                        .finish_run(
                            &msg.site_id,
                            &msg.ad_account_id,
                            &msg.run_id,
                            &update,
                            &seen,
                        )
                        .await?),
                    Finish::PauseConnection { .. } => Ok(true),
                }
            }
        }
    }

    /// Records the run's update on the account; a failure the run still
    /// holding the account recorded goes on the bus. `seen`: the schedule
    /// as the run read it. Answers whether the account was as read.
    async fn record_update(
        &self,
        msg: &SyncMessage,
        outcome: &RunOutcome,
        update: &adtrail_domain::outcome::LinkUpdate,
        seen: Seen,
    ) -> Result<bool, WorkerError> {
        let ended = self
            .store
            .links()
            .finish_run(&msg.site_id, &msg.ad_account_id, &msg.run_id, update, &seen)
            .await?;
        if ended
            && let (RunOutcome::Failed { .. } | RunOutcome::Partial { .. }, Some(error)) =
                (outcome, &update.last_error)
        {
            self.put_event(
                "AccountSyncFailed",
                json!({"siteId": msg.site_id, "adAccountId": msg.ad_account_id, "lastError": error, "nextSyncAt": update.next_sync_at}),
            )
            .await;
        }
        Ok(ended)
    }

    /// Puts an event on the bus; a bus failure is logged, never fails a run
    /// whose outcome is already stored.
    async fn put_event(&self, detail_type: &str, detail: serde_json::Value) {
        if let Err(error) = self.store.bus().put_event(detail_type, &detail).await {
            tracing::warn!(detail_type, error = %error, "could not put the event on the bus");
        }
    }
}
