//! The Lead Ads reconciliation, every 15 minutes per linked Page: each of
//! its active forms is asked for the leads created since the Page's
//! checkpoint (less an overlap), and each lead adtrail has not kept goes on
//! the leadgen queue, as a webhook's would, so a lead whose webhook never
//! came still arrives. The worker dedupes what overlaps. A link's first
//! reconciliation reads its backfill. Meta's throttling and refusals move
//! the Page's next turn back, as the spend sync does.

use std::collections::HashSet;

use adtrail_changes::forms::{FormsError, read_page_forms};
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::graph_error::GraphErrorKind;
use adtrail_domain::leadads::{
    LeadForm, PageLink, RECONCILE_EVERY_MS, reconcile_error, reconcile_retry_ms, reconcile_since,
};
use adtrail_meta::GraphError;
use adtrail_store::StoreError;
use adtrail_store::queue::LeadgenMessage;

use crate::{SweepReport, Sweeper};

/// Linked Pages looked at per shard of the work index and sweep.
const PAGES_PER_SHARD: i32 = 5;
/// Leads listed per form and reconciliation at most.
const MAX_LISTED: usize = 10_000;

/// Why one Page's reconciliation stopped.
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("Meta refused a read")]
    Graph(#[from] GraphError),
    #[error("the store failed")]
    Store(#[from] StoreError),
    #[error("the owner's listing no longer holds the Page's token")]
    NoPageToken,
}

impl Sweeper {
    /// Reconciles the linked Pages whose turn has come.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails before any Page is taken.
    pub(crate) async fn reconcile_pages(&self, report: &mut SweepReport) -> Result<(), StoreError> {
        let now = self.clock.now_ms();
        let pages = self.store.pages();
        for (page, seen) in pages.due_reconciles(now, PAGES_PER_SHARD).await? {
            if self.graph.out_of_time() {
                // The rest wait for the next sweep, still due.
                break;
            }
            if !pages
                .claim_reconcile(&page, seen, now + RECONCILE_EVERY_MS)
                .await?
            {
                continue;
            }
            let Some(link) = pages.page_link(&page).await? else {
                continue;
            };
            let (through, error, next_at) = match self.reconcile(&link, now).await {
                Ok(queued) => {
                    report.form_leads_requeued += queued;
                    (Some(now), None, now + RECONCILE_EVERY_MS)
                }
                Err(e) => {
                    tracing::warn!(page_id = %page, error = %e,
                        cause = ?std::error::Error::source(&e).map(ToString::to_string),
                        "a Page's reconciliation failed");
                    let (code, wait) = match &e {
                        ReconcileError::Graph(g) => (
                            reconcile_error(g.kind, &g.message),
                            reconcile_retry_ms(g.kind, g.regain_ms),
                        ),
                        ReconcileError::NoPageToken => (
                            reconcile_error(GraphErrorKind::Permission, &e.to_string()),
                            reconcile_retry_ms(GraphErrorKind::Permission, None),
                        ),
                        ReconcileError::Store(s) => (
                            last_error(LastErrorCode::Unexpected, &s.to_string()),
                            RECONCILE_EVERY_MS,
                        ),
                    };
                    (None, Some(code), now + wait)
                }
            };
            report.pages_reconciled += 1;
            pages
                .finish_reconcile(&page, now, through, error.as_deref(), next_at)
                .await?;
        }
        Ok(())
    }

    /// One Page: its active forms' leads since the checkpoint, those not
    /// kept put on the leadgen queue. Answers how many.
    async fn reconcile(&self, link: &PageLink, now: i64) -> Result<usize, ReconcileError> {
        let token = self
            .store
            .pages()
            .open_page_token(&link.owner_key, &link.page_id)
            .await?
            .ok_or(ReconcileError::NoPageToken)?;
        let forms = self.forms(link, &token, now).await?;
        let since = reconcile_since(link.reconciled_through, now);
        let mut queued = 0;
        for form in forms.iter().filter(|f| f.status == "ACTIVE") {
            let (listed, more) = self
                .graph
                .form_lead_ids(&token, &form.form_id, since, MAX_LISTED)
                .await?;
            if more {
                tracing::warn!(form_id = %form.form_id, "more leads than one reconciliation reads");
            }
            let kept: HashSet<String> = self
                .store
                .forms()
                .kept_form_leads(&link.site_id, &form.form_id, &listed)
                .await?;
            let missing: Vec<LeadgenMessage> = listed
                .into_iter()
                .filter(|(id, _)| !kept.contains(id))
                .map(|(id, created)| LeadgenMessage {
                    page_id: link.page_id.clone(),
                    leadgen_id: id,
                    form_id: Some(form.form_id.clone()),
                    ad_id: None,
                    adgroup_id: None,
                    created_time: Some(created.div_euclid(1_000)),
                    via: "reconcile".into(),
                })
                .collect();
            if !missing.is_empty() {
                let refused = self.store.queues().enqueue_leadgen(&missing).await?;
                if refused > 0 {
                    return Err(StoreError::Condition("SQS refused form leads").into());
                }
                queued += missing.len();
            }
        }
        Ok(queued)
    }

    /// The Page's forms as kept; read from Meta when none are.
    async fn forms(
        &self,
        link: &PageLink,
        token: &str,
        now: i64,
    ) -> Result<Vec<LeadForm>, ReconcileError> {
        let kept: Vec<LeadForm> = self
            .store
            .forms()
            .site_forms(&link.site_id)
            .await?
            .forms
            .into_iter()
            .filter(|f| f.page_id == link.page_id)
            .collect();
        if !kept.is_empty() {
            return Ok(kept);
        }
        read_page_forms(
            &self.store,
            &self.graph,
            &link.site_id,
            &link.page_id,
            token,
            now,
        )
        .await
        .map_err(|e| match e {
            FormsError::Graph(e) => e.into(),
            FormsError::Store(e) => e.into(),
        })
    }
}
