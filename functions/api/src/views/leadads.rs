//! The answers of the Lead Ads routes: a linked Page's forms, the form
//! leads kept (never an answer), a return, a forward, the webhook, the
//! forms report.

use std::collections::BTreeMap;

use adtrail_domain::leadads::{FormFigures, LeadForm};
use serde::Serialize;

use super::forms::{FormLeadView, FormView};

/// `GET /v1/sites/{siteId}/pages/{pageId}/forms`: the Page's forms and its
/// reconciliation's state.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageFormsView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) page_id: &'a str,
    pub(crate) last_reconcile_at: Option<i64>,
    pub(crate) reconciled_through: i64,
    pub(crate) last_error: Option<&'a str>,
    pub(crate) forms: Vec<FormView<'a>>,
    /// Forms were left out so the answer fits Lambda's 6 MB: archived ones
    /// and those with the fewest recent leads first.
    pub(crate) forms_truncated: bool,
}

/// `GET /v1/sites/{siteId}/form-leads`: the form leads kept, oldest first,
/// and where the next page starts (`null`: no more).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormLeadsView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) form_leads: Vec<FormLeadView<'a>>,
    pub(crate) next: Option<String>,
}

/// `POST …/form-leads/{leadgenId}/return`: the lead as returned;
/// `duplicate` when it was returned before.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormLeadReturnedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) form_lead: FormLeadView<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) duplicate: bool,
}

/// `POST /v1/meta/leadgen`: taken (`202`), or not, and why (`200`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ForwardView {
    pub(crate) accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<&'static str>,
}

/// `POST /v1/webhooks/meta`: how many form leads the delivery queued.
#[derive(Serialize)]
pub(crate) struct WebhookView {
    pub(crate) received: usize,
}

/// `GET /v1/reports/forms`: per form, its leads and where they went.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormsReportView {
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) forms: Vec<FormRow>,
    /// Rows of the forms with the fewest leads were left out so the answer
    /// fits Lambda's 6 MB.
    pub(crate) forms_truncated: bool,
}

/// One form's figures over the report's range.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormRow {
    site_id: String,
    page_id: String,
    form_id: String,
    name: String,
    leads: i64,
    entry: i64,
    columns: Vec<Count>,
    discarded: Vec<Count>,
    qualified: i64,
    won: i64,
    revenue_cents: i64,
    returned: i64,
}

/// Leads under one key (a column, a discard reason).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Count {
    key: String,
    leads: i64,
}

fn counts(map: BTreeMap<String, i64>) -> Vec<Count> {
    map.into_iter()
        .filter(|(_, leads)| *leads != 0)
        .map(|(key, leads)| Count { key, leads })
        .collect()
}

impl FormRow {
    pub(crate) fn of(site: &str, form: &LeadForm, f: FormFigures) -> Self {
        Self {
            site_id: site.to_owned(),
            page_id: form.page_id.clone(),
            form_id: form.form_id.clone(),
            name: form.name.clone(),
            leads: f.leads,
            entry: f.entry,
            columns: counts(f.columns),
            discarded: counts(f.discarded),
            qualified: f.board.qualified,
            won: f.board.won,
            revenue_cents: f.board.revenue_cents,
            returned: f.returned,
        }
    }
}
