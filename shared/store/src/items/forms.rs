//! The items of Lead Ads forms on a site: each form as Meta lists it, the
//! host's rules for it, and each form lead's choices and decision (kept
//! 90 days through the table's TTL).

use adtrail_domain::leadads::{
    Brakes, Choices, ContactMode, FirstContact, FormDecision, FormLeadRecord, FormRule, FormRules,
    LeadForm, Question, QuestionOption, RuleTarget,
};
use serde::{Deserialize, Serialize};

use super::{json_text, json_text_opt};

/// A question as the item keeps it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct QuestionDoc {
    key: String,
    label: String,
    kind: String,
    #[serde(default)]
    options: Vec<(String, String)>,
}

/// `siteforms#<siteId>` / `form#<formId>`: written whole at each read of
/// the Page's forms.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    page_id: String,
    form_id: String,
    name: String,
    status: String,
    #[serde(with = "json_text")]
    questions: Vec<QuestionDoc>,
    synced_at: i64,
}

impl FormItem {
    pub(crate) fn of(f: &LeadForm, pk: String, sk: String) -> Self {
        FormItem {
            pk,
            sk,
            page_id: f.page_id.clone(),
            form_id: f.form_id.clone(),
            name: f.name.clone(),
            status: f.status.clone(),
            questions: f
                .questions
                .iter()
                .map(|q| QuestionDoc {
                    key: q.key.clone(),
                    label: q.label.clone(),
                    kind: q.kind.clone(),
                    options: q
                        .options
                        .iter()
                        .map(|o| (o.key.clone(), o.value.clone()))
                        .collect(),
                })
                .collect(),
            synced_at: f.synced_at,
        }
    }
}

impl From<FormItem> for LeadForm {
    fn from(i: FormItem) -> Self {
        LeadForm {
            page_id: i.page_id,
            form_id: i.form_id,
            name: i.name,
            status: i.status,
            questions: i
                .questions
                .into_iter()
                .map(|q| Question {
                    key: q.key,
                    label: q.label,
                    kind: q.kind,
                    options: q
                        .options
                        .into_iter()
                        .map(|(key, value)| QuestionOption { key, value })
                        .collect(),
                })
                .collect(),
            synced_at: i.synced_at,
        }
    }
}

/// A rule as the item keeps it: a column or a discard reason.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleDoc {
    question_key: String,
    answers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    discard: Option<String>,
}

/// A first contact as the item keeps it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FirstContactDoc {
    mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    brakes: Option<(bool, i64, i64)>,
}

impl FirstContactDoc {
    fn of(c: &FirstContact) -> Self {
        FirstContactDoc {
            mode: c.mode.as_str().to_owned(),
            text: c.text.clone(),
            brakes: c
                .brakes
                .map(|b| (b.business_hours_only, b.max_per_hour, b.wait_minutes)),
        }
    }

    fn contact(self) -> Option<FirstContact> {
        Some(FirstContact {
            mode: ContactMode::parse(&self.mode)?,
            text: self.text,
            brakes: self
                .brakes
                .map(|(business_hours_only, max_per_hour, wait_minutes)| Brakes {
                    business_hours_only,
                    max_per_hour,
                    wait_minutes,
                }),
        })
    }
}

/// `siteforms#<siteId>` / `rules#<formId>`: the host's rules for a form.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RulesItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entry_column: Option<String>,
    #[serde(with = "json_text")]
    rules: Vec<RuleDoc>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_text_opt"
    )]
    first_contact: Option<FirstContactDoc>,
    #[serde(default)]
    whatsapp_button_confirmed: bool,
    pub(crate) updated_at: i64,
}

impl RulesItem {
    pub(crate) fn of(r: &FormRules, pk: String, sk: String, updated_at: i64) -> Self {
        RulesItem {
            pk,
            sk,
            entry_column: r.entry_column.clone(),
            rules: r
                .rules
                .iter()
                .map(|rule| {
                    let (column, discard) = match &rule.to {
                        RuleTarget::Column(c) => (Some(c.clone()), None),
                        RuleTarget::Discard(d) => (None, Some(d.clone())),
                    };
                    RuleDoc {
                        question_key: rule.question_key.clone(),
                        answers: rule.answers.clone(),
                        column,
                        discard,
                    }
                })
                .collect(),
            first_contact: r.first_contact.as_ref().map(FirstContactDoc::of),
            whatsapp_button_confirmed: r.whatsapp_button_confirmed,
            updated_at,
        }
    }

    pub(crate) fn rules(self) -> FormRules {
        FormRules {
            first_contact: self.first_contact.and_then(FirstContactDoc::contact),
            whatsapp_button_confirmed: self.whatsapp_button_confirmed,
            entry_column: self.entry_column,
            rules: self
                .rules
                .into_iter()
                .filter_map(|r| {
                    let to = match (r.column, r.discard) {
                        (Some(c), _) => RuleTarget::Column(c),
                        (None, Some(d)) => RuleTarget::Discard(d),
                        (None, None) => return None,
                    };
                    Some(FormRule {
                        question_key: r.question_key,
                        answers: r.answers,
                        to,
                    })
                })
                .collect(),
        }
    }
}

/// `formleads#<siteId>#<formId>` / `<createdAt>#<leadgenId>`: one form
/// lead's choices and decision, gone after 90 days (`ttl`).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormLeadItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    page_id: String,
    form_id: String,
    leadgen_id: String,
    created_at: i64,
    #[serde(with = "json_text")]
    choices: Choices,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    discard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rule: Option<usize>,
    origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ad_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    adset_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    campaign_id: Option<String>,
    received_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    returned_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    returned_reason: Option<String>,
    /// Epoch seconds: DynamoDB's TTL.
    ttl: i64,
}

/// `formleadid#<siteId>` / `<leadgenId>`: where a form lead's record is,
/// gone with it.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FormLeadRefItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    pub(crate) form_id: String,
    pub(crate) created_at: i64,
    pub(crate) ttl: i64,
}

impl FormLeadItem {
    pub(crate) fn of(r: &FormLeadRecord, pk: String, sk: String, ttl: i64) -> Self {
        let (column, discard) = match &r.decision {
            FormDecision::Column { column, .. } => (column.clone(), None),
            FormDecision::Discard { reason, .. } => (None, Some(reason.clone())),
        };
        FormLeadItem {
            pk,
            sk,
            site_id: r.site_id.clone(),
            page_id: r.page_id.clone(),
            form_id: r.form_id.clone(),
            leadgen_id: r.leadgen_id.clone(),
            created_at: r.created_at,
            choices: r.choices.clone(),
            column,
            discard,
            rule: r.decision.rule(),
            origin: r.origin.clone(),
            ad_id: r.ad_id.clone(),
            adset_id: r.adset_id.clone(),
            campaign_id: r.campaign_id.clone(),
            received_at: r.received_at,
            returned_at: r.returned.as_ref().map(|r| r.0),
            returned_reason: r.returned.as_ref().map(|r| r.1.clone()),
            ttl,
        }
    }
}

impl From<FormLeadItem> for FormLeadRecord {
    fn from(i: FormLeadItem) -> Self {
        let decision = match (i.discard, i.rule) {
            (Some(reason), Some(rule)) => FormDecision::Discard { reason, rule },
            (_, rule) => FormDecision::Column {
                column: i.column,
                rule,
            },
        };
        FormLeadRecord {
            site_id: i.site_id,
            page_id: i.page_id,
            form_id: i.form_id,
            leadgen_id: i.leadgen_id,
            created_at: i.created_at,
            choices: i.choices,
            decision,
            origin: i.origin,
            ad_id: i.ad_id,
            adset_id: i.adset_id,
            campaign_id: i.campaign_id,
            received_at: i.received_at,
            returned: i.returned_at.zip(i.returned_reason),
        }
    }
}
