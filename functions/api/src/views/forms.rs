//! The views of Lead Ads forms: a form with its questions, recent leads
//! and rules summary; a form's rules with each rule's count; a rule set's
//! simulation. Counts never carry a lead's choices, only their tallies.

use std::collections::BTreeMap;

use adtrail_domain::leadads::{
    FirstContact, FormDecision, FormLeadRecord, FormRules, LeadForm, RuleTarget, RulesTally,
};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OptionView<'a> {
    key: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QuestionView<'a> {
    key: &'a str,
    label: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    options: Vec<OptionView<'a>>,
}

/// A form's rules, in short.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RulesSummary<'a> {
    configured: bool,
    count: usize,
    entry_column: Option<&'a str>,
    updated_at: Option<i64>,
}

/// One day of a form's leads.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DayCount {
    pub(crate) day_start: i64,
    pub(crate) leads: usize,
}

/// What a form's last 30 days held.
pub(crate) struct Recent {
    pub(crate) leads: usize,
    pub(crate) daily: Vec<DayCount>,
    pub(crate) last_lead_at: Option<i64>,
    /// The window held more than was read.
    pub(crate) partial: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormView<'a> {
    form_id: &'a str,
    page_id: &'a str,
    name: &'a str,
    status: &'a str,
    synced_at: i64,
    questions: Vec<QuestionView<'a>>,
    leads30d: usize,
    daily: Vec<DayCount>,
    last_lead_at: Option<i64>,
    partial: bool,
    rules: RulesSummary<'a>,
}

pub(crate) fn form_view<'a>(
    form: &'a LeadForm,
    rules: Option<&'a (FormRules, i64)>,
    recent: Recent,
) -> FormView<'a> {
    FormView {
        form_id: &form.form_id,
        page_id: &form.page_id,
        name: &form.name,
        status: &form.status,
        synced_at: form.synced_at,
        questions: form
            .questions
            .iter()
            .map(|q| QuestionView {
                key: &q.key,
                label: &q.label,
                kind: &q.kind,
                options: q
                    .options
                    .iter()
                    .map(|o| OptionView {
                        key: &o.key,
                        value: &o.value,
                    })
                    .collect(),
            })
            .collect(),
        leads30d: recent.leads,
        daily: recent.daily,
        last_lead_at: recent.last_lead_at,
        partial: recent.partial,
        rules: RulesSummary {
            configured: rules.is_some(),
            count: rules.map_or(0, |r| r.0.rules.len()),
            entry_column: rules.and_then(|r| r.0.entry_column.as_deref()),
            updated_at: rules.map(|r| r.1),
        },
    }
}

/// Where a rule sends a lead, as the API writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TargetView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    discard: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RuleView<'a> {
    question_key: &'a str,
    answers: &'a [String],
    to: TargetView<'a>,
    /// The last 30 days' leads this rule decides.
    count30d: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RulesView<'a> {
    site_id: &'a str,
    form_id: &'a str,
    configured: bool,
    entry_column: Option<&'a str>,
    rules: Vec<RuleView<'a>>,
    updated_at: Option<i64>,
    /// The last 30 days' leads the counts read.
    total30d: usize,
    partial: bool,
    first_contact: Option<serde_json::Value>,
    whatsapp_button_confirmed: bool,
}

pub(crate) fn rules_view<'a>(
    site_id: &'a str,
    form_id: &'a str,
    rules: Option<&'a (FormRules, i64)>,
    tally: &RulesTally,
    partial: bool,
) -> RulesView<'a> {
    let set = rules.map(|r| &r.0);
    RulesView {
        site_id,
        form_id,
        configured: rules.is_some(),
        entry_column: set.and_then(|r| r.entry_column.as_deref()),
        rules: set
            .map(|r| r.rules.as_slice())
            .unwrap_or_default()
            .iter()
            .enumerate()
            .map(|(i, rule)| RuleView {
                question_key: &rule.question_key,
                answers: &rule.answers,
                to: match &rule.to {
                    RuleTarget::Column(c) => TargetView {
                        column: Some(c),
                        discard: None,
                    },
                    RuleTarget::Discard(d) => TargetView {
                        column: None,
                        discard: Some(d),
                    },
                },
                count30d: tally.rules.get(i).copied().unwrap_or(0),
            })
            .collect(),
        updated_at: rules.map(|r| r.1),
        total30d: tally.total,
        partial,
        first_contact: set
            .and_then(|r| r.first_contact.as_ref())
            .map(FirstContact::to_json),
        whatsapp_button_confirmed: set.is_some_and(|r| r.whatsapp_button_confirmed),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ColumnCount<'a> {
    column: &'a str,
    leads: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReasonCount<'a> {
    reason: &'a str,
    leads: usize,
}

/// A rule set decided over the last 30 days' leads, without saving it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SimulationView<'a> {
    total: usize,
    entry: usize,
    columns: Vec<ColumnCount<'a>>,
    discarded: Vec<ReasonCount<'a>>,
    rules: &'a [usize],
    partial: bool,
}

fn counts<'a, T>(map: &'a BTreeMap<String, usize>, f: impl Fn(&'a str, usize) -> T) -> Vec<T> {
    map.iter().map(|(k, v)| f(k, *v)).collect()
}

pub(crate) fn simulation_view(tally: &RulesTally, partial: bool) -> SimulationView<'_> {
    SimulationView {
        total: tally.total,
        entry: tally.entry,
        columns: counts(&tally.columns, |column, leads| ColumnCount {
            column,
            leads,
        }),
        discarded: counts(&tally.discarded, |reason, leads| ReasonCount {
            reason,
            leads,
        }),
        rules: &tally.rules,
        partial,
    }
}

/// A form lead as adtrail keeps it: ids, the decision, the origin, a
/// return. Never an answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormLeadView<'a> {
    leadgen_id: &'a str,
    page_id: &'a str,
    form_id: &'a str,
    created_at: i64,
    received_at: i64,
    /// The board's lead (`meta-lead:<leadgenId>`), unless discarded.
    lead_key: Option<String>,
    decision: DecisionView<'a>,
    origin: OriginView<'a>,
    returned: Option<ReturnedView<'a>>,
    /// The person's answers, read live from Meta: only on the one-lead read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) answers: Option<Vec<AnswerView>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum DecisionView<'a> {
    Column {
        column: Option<&'a str>,
        rule: Option<usize>,
    },
    Discard {
        reason: &'a str,
        rule: usize,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OriginView<'a> {
    kind: &'a str,
    ad_id: Option<&'a str>,
    adset_id: Option<&'a str>,
    campaign_id: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReturnedView<'a> {
    at: i64,
    reason: &'a str,
}

/// One answer of a form lead, as Meta gives it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AnswerView {
    pub(crate) question_key: String,
    pub(crate) label: Option<String>,
    pub(crate) values: Vec<String>,
}

pub(crate) fn form_lead_view(r: &FormLeadRecord) -> FormLeadView<'_> {
    let decision = match &r.decision {
        FormDecision::Column { column, rule } => DecisionView::Column {
            column: column.as_deref(),
            rule: *rule,
        },
        FormDecision::Discard { reason, rule } => DecisionView::Discard {
            reason,
            rule: *rule,
        },
    };
    FormLeadView {
        leadgen_id: &r.leadgen_id,
        page_id: &r.page_id,
        form_id: &r.form_id,
        created_at: r.created_at,
        received_at: r.received_at,
        lead_key: r.lead_key(),
        decision,
        origin: OriginView {
            kind: &r.origin,
            ad_id: r.ad_id.as_deref(),
            adset_id: r.adset_id.as_deref(),
            campaign_id: r.campaign_id.as_deref(),
        },
        returned: r
            .returned
            .as_ref()
            .map(|(at, reason)| ReturnedView { at: *at, reason }),
        answers: None,
    }
}
