//! The `leadgen-worker` Lambda: drains the leadgen queue, one message per
//! form lead Meta announced (by webhook, and later by the forward door and
//! the reconciliation). For each: the site the Page feeds (a Page no site
//! links is dropped: Meta announces every lead of a subscribed Page), the
//! Page's token (sealed at connect, opened with KMS for purpose
//! `meta-page-token`), the lead read from Meta without its answers, the
//! lead recorded on the site's board through the shared lead-change use
//! case, and `FormLeadArrived` on the bus.
//!
//! Nothing twice: the lead's key and its change id are made from the
//! `leadgen_id`, so whatever arrives again (Meta retries for 36 hours; the
//! doors overlap) finds its change written and records nothing. Nothing
//! lost: a failure (Meta, KMS, DynamoDB, the bus) keeps the message, which
//! comes back after the queue's visibility timeout and, after ten receives,
//! waits in the dead-letter queue. A message SQS gives again (its receive
//! count above one) puts the event again when its lead was already
//! written, since the first try may have written the lead and died before
//! the bus; a second delivery of Meta's puts nothing. The reads from Meta
//! are bound to the invocation's deadline ([`CALLS_RESERVE`]): a message
//! there is no time for goes back untouched, and the batch ends by itself.

use adtrail_changes::forms::{FormsError, read_page_forms};
use adtrail_changes::{RecordError, Recorded, record};
use adtrail_domain::SiteId;
use adtrail_domain::leadads::{
    Choices, FORM_LEAD_ARRIVED, FormDecision, FormLead, FormLeadRecord, FormRules, Question,
    choices, decide_form_lead, form_lead_arrived, lead_read_wait_ms,
};
use adtrail_domain::leads::{LeadUpdate, NewLead};
use adtrail_domain::time::SharedClock;
use adtrail_meta::{GraphClient, GraphError};
use adtrail_store::queue::{LeadgenMessage, Visibility};
use adtrail_store::{Store, StoreError};
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::LambdaEvent;
use serde::Serialize;

/// What every batch needs, built once per process.
#[derive(Debug, Clone)]
pub struct LeadgenWorker {
    pub store: Store,
    pub graph: GraphClient,
    pub clock: SharedClock,
    /// How a message Meta throttled is held back (its queue's visibility).
    pub visibility: Visibility,
}

/// Why a message is kept for another try.
#[derive(Debug, thiserror::Error)]
pub enum LeadgenError {
    #[error("the message is not a leadgen message")]
    BadMessage(#[source] serde_json::Error),
    #[error("the Page's link names no valid site")]
    BadSite,
    /// The owner's listing no longer holds the Page's token: a reconnect
    /// brings it back, and the message waits for it.
    #[error("no token is kept for the Page")]
    NoPageToken,
    #[error("Meta refused the lead read")]
    Graph(#[from] GraphError),
    #[error("the store failed")]
    Store(#[from] StoreError),
    #[error("recording the lead failed")]
    Record(#[from] RecordError),
    #[error("reading the Page's forms failed")]
    Forms(#[from] FormsError),
}

/// What became of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// Decided by the form's rules, recorded (on the board unless
    /// discarded), announced on the bus.
    Recorded,
    /// Recorded before; announced again only when SQS gave the message
    /// again.
    Duplicate,
    /// The Page feeds no site.
    NotLinked,
}

/// What a batch did, for the one line it logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeadgenReport {
    pub recorded: usize,
    pub duplicates: usize,
    pub not_linked: usize,
    pub kept: usize,
    /// Handed back untouched: the invocation's time was up.
    pub left: usize,
}

/// Time kept back from the invocation's deadline (of its 60 seconds) for
/// what a message needs after its reads from Meta: the lead recorded, its
/// event put. A read that hangs then fails its message, not the batch:
/// Lambda ending the invocation would fail all ten, the leads already
/// recorded among them, and a Meta slow enough to do that every time would
/// send the batch's messages to the dead-letter queue receive after
/// receive.
pub const CALLS_RESERVE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves one batch of the leadgen queue, one message after another (a
/// webhook's leads are few; Meta's rate limit is per Page).
///
/// # Errors
/// Never as a whole: each failed message is a batch item failure.
pub async fn handle(
    worker: &LeadgenWorker,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, lambda_runtime::Error> {
    let mut response = SqsBatchResponse::default();
    let mut report = LeadgenReport::default();
    let deadline = adtrail_http::Deadline::from_lambda_ms(event.context.deadline, CALLS_RESERVE);
    let worker = &worker.within(deadline);
    for record in &event.payload.records {
        let id = record.message_id.clone().unwrap_or_default();
        if worker.graph.out_of_time() {
            // No time left for its read: back to the queue as it came.
            report.left += 1;
            response.add_failure(id);
            continue;
        }
        match worker.take(record).await {
            Ok(Taken::Recorded) => report.recorded += 1,
            Ok(Taken::Duplicate) => report.duplicates += 1,
            Ok(Taken::NotLinked) => report.not_linked += 1,
            Err(error) => {
                tracing::warn!(message_id = %id, error = %error,
                    cause = ?std::error::Error::source(&error).map(ToString::to_string),
                    "form lead kept for another try");
                report.kept += 1;
                worker.hold_if_throttled(record, &error).await;
                response.add_failure(id);
            }
        }
    }
    tracing::info!(
        recorded = report.recorded,
        duplicates = report.duplicates,
        not_linked = report.not_linked,
        kept = report.kept,
        left = report.left,
        "leadgen batch"
    );
    Ok(response)
}

/// What is kept of a form lead read from Meta: ids, its time, its origin,
/// the options chosen and the rules' decision, never an answer.
fn record_of(
    site: &SiteId,
    page_id: &str,
    form_id: String,
    lead: &FormLead,
    decision: FormDecision,
    choices: Choices,
    now: i64,
) -> FormLeadRecord {
    FormLeadRecord {
        site_id: site.as_str().to_owned(),
        page_id: page_id.to_owned(),
        form_id,
        leadgen_id: lead.leadgen_id.clone(),
        created_at: lead.created_at,
        decision,
        choices,
        origin: lead.origin().to_owned(),
        ad_id: lead.ad_id.clone(),
        adset_id: lead.adset_id.clone(),
        campaign_id: lead.campaign_id.clone(),
        received_at: now,
        returned: None,
    }
}

/// Whether SQS has given this message before.
fn redelivered(record: &SqsMessage) -> bool {
    record
        .attributes
        .get("ApproximateReceiveCount")
        .and_then(|n| n.parse::<u32>().ok())
        .is_some_and(|n| n > 1)
}

impl LeadgenWorker {
    /// This worker, its reads from Meta bound to `deadline`.
    pub fn within(&self, deadline: Option<adtrail_http::Deadline>) -> Self {
        Self {
            graph: self.graph.within(deadline),
            ..self.clone()
        }
    }

    /// A lead whose read Meta throttled waits as a throttled
    /// reconciliation does, not the queue's few minutes: each early try
    /// would spend the Page's small lead-retrieval quota and a receive of
    /// the ten before the dead-letter queue. A hold that fails leaves the
    /// queue's own timeout.
    async fn hold_if_throttled(&self, record: &SqsMessage, error: &LeadgenError) {
        let LeadgenError::Graph(e) = error else {
            return;
        };
        let (Some(wait_ms), Some(receipt)) = (
            lead_read_wait_ms(e.kind, e.regain_ms),
            record.receipt_handle.as_deref(),
        ) else {
            return;
        };
        if let Err(error) = self
            .visibility
            .hold(self.store.queues(), receipt, wait_ms)
            .await
        {
            tracing::warn!(error = %error, "could not hold the throttled form lead back");
        }
    }

    /// One message: the link, the token, the lead, the rules' decision, the
    /// record, the event.
    ///
    /// # Errors
    /// [`LeadgenError`]: the message is kept for another try.
    pub async fn take(&self, sqs: &SqsMessage) -> Result<Taken, LeadgenError> {
        let message: LeadgenMessage = serde_json::from_str(sqs.body.as_deref().unwrap_or(""))
            .map_err(LeadgenError::BadMessage)?;
        let pages = self.store.pages();
        let Some(link) = pages.page_link(&message.page_id).await? else {
            tracing::info!(page_id = %message.page_id, "form lead of a Page no site links: dropped");
            return Ok(Taken::NotLinked);
        };
        let site = SiteId::parse("siteId", &link.site_id).map_err(|_| LeadgenError::BadSite)?;
        // Kept already (Meta's retries, the doors overlapping): nothing to
        // read. A message SQS gives again goes on, to announce it again.
        if !redelivered(sqs)
            && self
                .store
                .forms()
                .form_lead_by_id(site.as_str(), &message.leadgen_id)
                .await?
                .is_some()
        {
            return Ok(Taken::Duplicate);
        }
        let token = self
            .store
            .pages()
            .open_page_token(&link.owner_key, &link.page_id)
            .await?
            .ok_or(LeadgenError::NoPageToken)?;
        let mut lead = self.graph.form_lead(&token, &message.leadgen_id).await?;
        let form_id = lead
            .form_id
            .clone()
            .or(message.form_id)
            .unwrap_or_else(|| "unknown".into());
        let (questions, rules) = self.form(&site, &link.page_id, &form_id, &token).await?;
        // The answers are read only here, for the options chosen.
        let chosen = choices(&questions, &std::mem::take(&mut lead.answers).0);
        let now = self.clock.now_ms();
        let decision = decide_form_lead(&rules, &chosen);
        let record = record_of(&site, &link.page_id, form_id, &lead, decision, chosen, now);
        // The first delivery's decision stands.
        let earlier = self.store.forms().record_form_lead(&record).await?;
        let fresh = earlier.is_none();
        let decision = earlier.map_or(record.decision, |e| e.decision);
        let (lead_id, written) = match &decision {
            FormDecision::Column { column, .. } => {
                let (id, written) = self
                    .to_board(&site, &lead, &record.form_id, column.clone(), now)
                    .await?;
                (Some(id), written)
            }
            FormDecision::Discard { .. } => (None, false),
        };
        if fresh || written || redelivered(sqs) {
            let detail = form_lead_arrived(
                site.as_str(),
                &link.page_id,
                &lead,
                lead_id.as_deref(),
                &decision,
                rules.first_contact.as_ref(),
            );
            self.store
                .bus()
                .put_event(FORM_LEAD_ARRIVED, &detail)
                .await?;
        }
        Ok(if fresh || written {
            Taken::Recorded
        } else {
            Taken::Duplicate
        })
    }

    /// The form's questions and the site's rules for it. A form adtrail
    /// has not seen (made after the Page was linked) is read from Meta
    /// with the Page's forms.
    async fn form(
        &self,
        site: &SiteId,
        page: &str,
        form_id: &str,
        token: &str,
    ) -> Result<(Vec<Question>, FormRules), LeadgenError> {
        let forms = self.store.forms();
        if let Some((form, rules)) = forms.form(site.as_str(), form_id).await? {
            return Ok((form.questions, rules.map(|r| r.0).unwrap_or_default()));
        }
        let now = self.clock.now_ms();
        let listed =
            read_page_forms(&self.store, &self.graph, site.as_str(), page, token, now).await?;
        let questions = listed
            .into_iter()
            .find(|f| f.form_id == form_id)
            .map(|f| f.questions)
            .unwrap_or_default();
        Ok((questions, FormRules::default()))
    }

    /// Records the lead on the board in `column` (once per `leadgen_id`),
    /// counted under its form: its id, and whether this call wrote it.
    async fn to_board(
        &self,
        site: &SiteId,
        lead: &FormLead,
        form_id: &str,
        column: Option<String>,
        now: i64,
    ) -> Result<(String, bool), LeadgenError> {
        let update = LeadUpdate {
            change_id: lead.change_id(),
            occurred_at: lead.occurred_at(now),
            stage: None,
            revenue_cents: None,
            column,
            hashes: None,
            contact: None,
        };
        let new = NewLead {
            origin: lead.origin().to_owned(),
            ad_id: lead.paid_ad().map(str::to_owned),
            form_id: Some(form_id.to_owned()),
            label: None,
        };
        let key = lead.lead_key();
        match record(
            &self.store,
            self.clock.as_ref(),
            site,
            &key,
            &update,
            Some(&new),
        )
        .await?
        {
            Recorded::Written(plan) => Ok((plan.lead.lead_id.clone(), true)),
            Recorded::Duplicate(Some(known))
            | Recorded::Unchanged {
                lead: Some(known), ..
            } => Ok((known.lead_id, false)),
            Recorded::Duplicate(None) | Recorded::Unchanged { lead: None, .. } => {
                Err(LeadgenError::Record(RecordError::NoLead))
            }
        }
    }
}
