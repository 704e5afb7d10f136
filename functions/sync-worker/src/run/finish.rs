//! The end of a run: its outcome recorded on the account (if the run
//! still holds it: the domain's `finish` decides, the store records), and
//! what others must know put on the bus.

use super::*;

impl Worker {
    /// Records the outcome on the account (if the run still holds it), and
    /// what others must know on the bus.
    pub(crate) async fn finish(
        &self,
        msg: &SyncMessage,
        link: &SiteAdAccount,
        token_version: &str,
        outcome: &RunOutcome,
        started_at: i64,
    ) -> Result<(), WorkerError> {
        let now = self.clock.now_ms();
        let current = self
            .store
            .links()
            .get_link(&msg.site_id, &msg.ad_account_id)
            .await?;
        let Some(current) = current else {
            // Unlinked while the run wrote: take back whatever it wrote
            // after the unlink's own purge ran.
            self.store
                .spend()
                .mark_purge(&msg.site_id, &msg.ad_account_id, now)
                .await?;
            return Ok(());
        };
        if current.run_id.as_deref() != Some(msg.run_id.as_str()) {
            // A newer run holds the account: this one's ending is not the account's.
            return Ok(());
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
        let progress = LinkProgress {
            sync_state: current.sync_state,
            failures: current.failures,
            sync_requested: current.sync_requested,
            token_still_stored,
            leased_next: current.next_sync_at,
            interval: self.interval,
            quiet_interval: self.quiet_interval,
        };
        match finish(progress, outcome, started_at, now) {
            Finish::Update(update) => {
                self.record_update(msg, outcome, &update, current.next_sync_at)
                    .await
            }
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
                    return Ok(());
                }
                // A new token was stored between the checks: retry now.
                let retry = LinkProgress {
                    token_still_stored: false,
                    ..progress
                };
                if let Finish::Update(update) = finish(retry, outcome, started_at, now) {
                    self.store
                        .links()
                        .finish_run(
                            &msg.site_id,
                            &msg.ad_account_id,
                            &msg.run_id,
                            &update,
                            current.next_sync_at,
                        )
                        .await?;
                }
                Ok(())
            }
        }
    }

    /// Records the run's update on the account; a failure the run still
    /// holding the account recorded goes on the bus.
    async fn record_update(
        &self,
        msg: &SyncMessage,
        outcome: &RunOutcome,
        update: &adtrail_domain::outcome::LinkUpdate,
        leased_next: Option<i64>,
    ) -> Result<(), WorkerError> {
        if self
            .store
            .links()
            .finish_run(
                &msg.site_id,
                &msg.ad_account_id,
                &msg.run_id,
                update,
                leased_next,
            )
            .await?
            && let (RunOutcome::Failed { .. } | RunOutcome::Partial { .. }, Some(error)) =
                (outcome, &update.last_error)
        {
            self.put_event(
                "AccountSyncFailed",
                json!({"siteId": msg.site_id, "adAccountId": msg.ad_account_id, "lastError": error, "nextSyncAt": update.next_sync_at}),
            )
            .await;
        }
        Ok(())
    }

    /// Puts an event on the bus; a bus failure is logged, never fails a run
    /// whose outcome is already stored.
    async fn put_event(&self, detail_type: &str, detail: serde_json::Value) {
        if let Err(error) = self.store.bus().put_event(detail_type, &detail).await {
            tracing::warn!(detail_type, error = %error, "could not put the event on the bus");
        }
    }
}
