//! Meta's Lead Ads webhooks, read without trust: a `page` object's
//! `entry[].changes[]` whose `field` is `leadgen`, each naming one form lead
//! (`leadgen_id`, its Page, form and ad, `created_time`). Ids come as
//! numbers or strings: they are kept as text, digits only, at most 32; a
//! change that does not hold one is skipped, never guessed. The answers of
//! a lead are not in the webhook: they are read from Meta with the Page's
//! token, later.

use serde_json::Value;

mod form_lead;
mod forms;
mod reconcile;
mod report;
pub use form_lead::{
    Answers, FORM_LEAD_ARRIVED, FormLead, ORIGIN_ORGANIC, ORIGIN_PAID, form_lead_arrived,
    meta_lead_id, meta_lead_key, parse_created_time,
};
pub use forms::{
    Brakes, Choices, ContactMode, FORM_LEAD_KEPT_MS, FirstContact, FormDecision, FormLeadRecord,
    FormRule, FormRules, LeadForm, MAX_FIRST_CONTACT_TEXT, MAX_REASON, MAX_RULE_ANSWERS, MAX_RULES,
    Question, QuestionOption, RuleTarget, RulesTally, check_rules, choices, decide_form_lead,
    tally,
};
pub use reconcile::{
    MAX_BACKFILL_DAYS, RECONCILE_EVERY_MS, RECONCILE_OVERLAP_MS, lead_read_wait_ms,
    reconcile_error, reconcile_retry_ms, reconcile_since,
};
pub use report::{FormCount, FormFigures};

/// The most leads one webhook delivery is read for: Meta batches changes,
/// and a delivery past this is cut (the 15-minute reconciliation reads
/// what was left).
pub const MAX_LEADS_PER_DELIVERY: usize = 1_000;

/// One form lead a webhook announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadgenChange {
    pub page_id: String,
    pub leadgen_id: String,
    pub form_id: Option<String>,
    pub ad_id: Option<String>,
    /// The ad set (Meta's `adgroup_id`).
    pub adgroup_id: Option<String>,
    /// Epoch seconds, as Meta gives it.
    pub created_time: Option<i64>,
}

/// A Facebook Page an owner's token lists, with its own token sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerPage {
    pub owner_key: String,
    pub page_id: String,
    pub name: String,
    /// What the token's user may do on the Page.
    pub tasks: Vec<String>,
    /// The Page's token as KMS sealed it (context: owner, Page, purpose);
    /// empty when Meta listed the Page without one.
    pub sealed_token: Vec<u8>,
    /// A new value each time the Page's token is stored.
    pub token_version: String,
    pub listed_at: i64,
}

impl OwnerPage {
    /// Whether its form leads can be read and its webhook installed: Meta
    /// asks for a Page token of someone who can `ADVERTISE` on the Page.
    pub fn leads_allowed(&self) -> bool {
        !self.sealed_token.is_empty() && self.tasks.iter().any(|t| t == "ADVERTISE")
    }
}

/// A Page feeding a site: its form leads go to the site's board. One Page
/// feeds one site, like an ad account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLink {
    pub site_id: String,
    pub page_id: String,
    /// The owner whose token lists the Page (its token reads the leads).
    pub owner_key: String,
    /// When Meta took the app's subscription to the Page's `leadgen`.
    pub subscribed_at: i64,
    /// Leads created before this were reconciled (at link: the backfill's
    /// start).
    pub reconciled_through: i64,
    pub last_reconcile_at: Option<i64>,
    /// Why the last reconciliation failed (a `lastError` code and text).
    pub last_error: Option<String>,
}

/// An id as Meta sends it (a number or a string), as text: 1 to 32 digits.
pub fn meta_id(value: Option<&Value>) -> Option<String> {
    let text = match value? {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_u64() => n.to_string(),
        _ => return None,
    };
    (!text.is_empty() && text.len() <= 32 && text.bytes().all(|b| b.is_ascii_digit()))
        .then_some(text)
}

/// The form leads of a webhook body, in order, at most
/// [`MAX_LEADS_PER_DELIVERY`]; `None` when the body is not a `page`
/// object's delivery at all.
pub fn leadgen_changes(body: &Value) -> Option<Vec<LeadgenChange>> {
    if body.get("object").and_then(Value::as_str) != Some("page") {
        return None;
    }
    let entries = body.get("entry")?.as_array()?;
    let mut leads = vec![];
    for entry in entries {
        let entry_page = meta_id(entry.get("id"));
        let changes = entry.get("changes").and_then(Value::as_array);
        for change in changes.into_iter().flatten() {
            if change.get("field").and_then(Value::as_str) != Some("leadgen") {
                continue;
            }
            let Some(v) = change.get("value") else {
                continue;
            };
            let page = meta_id(v.get("page_id")).or_else(|| entry_page.clone());
            let (Some(page_id), Some(leadgen_id)) = (page, meta_id(v.get("leadgen_id"))) else {
                continue;
            };
            leads.push(LeadgenChange {
                page_id,
                leadgen_id,
                form_id: meta_id(v.get("form_id")),
                ad_id: meta_id(v.get("ad_id")),
                adgroup_id: meta_id(v.get("adgroup_id")),
                created_time: v.get("created_time").and_then(Value::as_i64),
            });
            if leads.len() == MAX_LEADS_PER_DELIVERY {
                return Some(leads);
            }
        }
    }
    Some(leads)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn leadgen_changes_are_read_with_their_ids_as_text() {
        let body = json!({"object": "page", "entry": [
            {"id": "1111", "time": 1, "changes": [
                {"field": "leadgen", "value": {"leadgen_id": 444_444_444_444_444_u64,
                    "page_id": 1111, "form_id": "2222", "ad_id": "3333", "adgroup_id": 5555,
                    "created_time": 1_764_547_200}},
                {"field": "feed", "value": {"post_id": "1"}},
                {"field": "leadgen", "value": {"leadgen_id": "not-digits", "page_id": "1111"}},
            ]},
            {"id": "9999", "changes": [
                {"field": "leadgen", "value": {"leadgen_id": "777"}}
            ]}
        ]});
        let leads = leadgen_changes(&body).unwrap();
        assert_eq!(
            leads,
            vec![
                LeadgenChange {
                    page_id: "1111".into(),
                    leadgen_id: "444444444444444".into(),
                    form_id: Some("2222".into()),
                    ad_id: Some("3333".into()),
                    adgroup_id: Some("5555".into()),
                    created_time: Some(1_764_547_200),
                },
                LeadgenChange {
                    page_id: "9999".into(),
                    leadgen_id: "777".into(),
                    form_id: None,
                    ad_id: None,
                    adgroup_id: None,
                    created_time: None,
                },
            ],
            "the entry's id stands for a change without page_id; a bad id is skipped"
        );
        assert_eq!(
            leadgen_changes(&json!({"object": "user", "entry": []})),
            None
        );
        assert_eq!(meta_id(Some(&json!(-5))), None);
        assert_eq!(meta_id(Some(&json!("1".repeat(33)))), None);
        assert_eq!(meta_id(Some(&json!(1.5))), None);
    }

    #[test]
    fn a_page_allows_leads_with_its_token_and_the_advertise_task() {
        let page = OwnerPage {
            owner_key: "agency".into(),
            page_id: "1".into(),
            name: "Loja X".into(),
            tasks: vec!["ANALYZE".into(), "ADVERTISE".into()],
            sealed_token: vec![1],
            token_version: "v1".into(),
            listed_at: 0,
        };
        assert!(page.leads_allowed());
        let analyst = OwnerPage {
            tasks: vec!["ANALYZE".into()],
            ..page.clone()
        };
        assert!(!analyst.leads_allowed());
        let tokenless = OwnerPage {
            sealed_token: vec![],
            ..page
        };
        assert!(!tokenless.leads_allowed());
    }
}
