//! A Page's instant forms and the host's rules for each: which board
//! column a form lead enters, or why it is discarded, from the options it
//! chose on multiple-choice questions. First match wins; no match enters
//! the form's entry column. A lead's choices are option keys only (never
//! free text, names, e-mails or phones): what adtrail keeps of a lead's
//! answers, for the rules, their counts and simulations.

use std::collections::BTreeMap;

use crate::board::Board;
use crate::ids::check_opaque;

/// The most rules a form takes.
pub const MAX_RULES: usize = 50;
/// The most answers one rule matches.
pub const MAX_RULE_ANSWERS: usize = 50;
/// The longest discard reason.
pub const MAX_REASON: usize = 64;

/// An instant form as Meta lists it (`/{page}/leadgen_forms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadForm {
    pub page_id: String,
    pub form_id: String,
    pub name: String,
    /// `ACTIVE`, `ARCHIVED`, `DELETED` or `DRAFT`.
    pub status: String,
    pub questions: Vec<Question>,
    /// When adtrail last read it from Meta.
    pub synced_at: i64,
}

/// One question of a form; `options` only on multiple-choice ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub key: String,
    pub label: String,
    /// Meta's type (`FULL_NAME`, `EMAIL`, `CUSTOM`, …).
    pub kind: String,
    pub options: Vec<QuestionOption>,
}

/// An option of a multiple-choice question: its key and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionOption {
    pub key: String,
    pub value: String,
}

/// Where a rule sends a lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleTarget {
    Column(String),
    Discard(String),
}

/// `questionKey` answered with any of `answers` sends the lead `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormRule {
    pub question_key: String,
    pub answers: Vec<String>,
    pub to: RuleTarget,
}

/// A form's rules on one site.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FormRules {
    /// The column a lead no rule matched enters (`None`: the board's
    /// default, as any new lead).
    pub entry_column: Option<String>,
    pub rules: Vec<FormRule>,
    /// How the host's CRM first contacts a new lead (WhatsApp): stored,
    /// checked and handed on with each lead; adtrail sends no message.
    pub first_contact: Option<FirstContact>,
    /// The host confirmed the form's WhatsApp button.
    pub whatsapp_button_confirmed: bool,
}

/// The longest first-contact message.
pub const MAX_FIRST_CONTACT_TEXT: usize = 1_000;

/// Who starts the conversation with a new form lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContactMode {
    /// The lead writes first (the form's WhatsApp button).
    LeadStarts,
    /// A person sends the prepared text with one click.
    OneClick,
    /// The CRM sends the text by itself, within the brakes.
    Automatic,
}

impl ContactMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "lead_starts" => Some(Self::LeadStarts),
            "one_click" => Some(Self::OneClick),
            "automatic" => Some(Self::Automatic),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeadStarts => "lead_starts",
            Self::OneClick => "one_click",
            Self::Automatic => "automatic",
        }
    }
}

/// A form's first contact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstContact {
    pub mode: ContactMode,
    pub text: Option<String>,
    pub brakes: Option<Brakes>,
}

impl FirstContact {
    /// As the API writes it and `FormLeadArrived` carries it.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "mode": self.mode.as_str(),
            "text": self.text,
            "brakes": self.brakes.map(|b| serde_json::json!({
                "businessHoursOnly": b.business_hours_only,
                "maxPerHour": b.max_per_hour,
                "waitMinutes": b.wait_minutes,
            })),
        })
    }
}

/// Limits on automatic first messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Brakes {
    pub business_hours_only: bool,
    /// 1 to 1,000.
    pub max_per_hour: i64,
    /// 0 to 1,440.
    pub wait_minutes: i64,
}

/// Checks a first contact; the error names the field.
///
/// # Errors
/// A message starting with `firstContact.…`.
pub fn check_first_contact(c: &FirstContact) -> Result<(), String> {
    if let Some(t) = &c.text
        && (t.trim().is_empty()
            || t.chars().count() > MAX_FIRST_CONTACT_TEXT
            || t.chars().any(|ch| ch.is_control() && ch != '\n'))
    {
        return Err(format!(
            "firstContact.text: 1 to {MAX_FIRST_CONTACT_TEXT} characters, no control characters but new lines"
        ));
    }
    if c.mode != ContactMode::LeadStarts && c.text.is_none() {
        return Err("firstContact.text: required unless the lead starts".into());
    }
    if let Some(b) = &c.brakes {
        if !(1..=1_000).contains(&b.max_per_hour) {
            return Err("firstContact.brakes.maxPerHour: 1 to 1000".into());
        }
        if !(0..=1_440).contains(&b.wait_minutes) {
            return Err("firstContact.brakes.waitMinutes: 0 to 1440".into());
        }
    }
    Ok(())
}

/// What the rules decided for one lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormDecision {
    /// Into a column (a rule's, or the entry column), or the board's
    /// default when neither names one.
    Column {
        column: Option<String>,
        /// The rule that matched; `None`: the entry.
        rule: Option<usize>,
    },
    /// Not a lead for the board: why, and the rule that said so.
    Discard { reason: String, rule: usize },
}

impl FormDecision {
    /// The rule that decided, if one did.
    pub fn rule(&self) -> Option<usize> {
        match self {
            FormDecision::Column { rule, .. } => *rule,
            FormDecision::Discard { rule, .. } => Some(*rule),
        }
    }
}

/// A lead's choices: question key → the option keys it chose.
pub type Choices = BTreeMap<String, Vec<String>>;

/// The option keys a lead chose, from its answers as Meta gives them
/// (`field_data`: a question's key and values, a value being an option's
/// key, or its shown value on forms without custom keys). Answers to
/// questions without options, and values no option has, are left out: the
/// person's own words are never kept.
pub fn choices(questions: &[Question], answers: &[(String, Vec<String>)]) -> Choices {
    let mut chosen = Choices::new();
    for (name, values) in answers {
        let Some(q) = questions
            .iter()
            .find(|q| &q.key == name && !q.options.is_empty())
        else {
            continue;
        };
        let mut keys: Vec<String> = values
            .iter()
            .filter_map(|v| {
                q.options
                    .iter()
                    .find(|o| &o.key == v || &o.value == v)
                    .map(|o| o.key.clone())
            })
            .collect();
        keys.sort();
        keys.dedup();
        if !keys.is_empty() {
            chosen.insert(q.key.clone(), keys);
        }
    }
    chosen
}

/// Decides a lead: the first rule whose question it answered with one of
/// the rule's answers, else the entry column.
pub fn decide_form_lead(rules: &FormRules, chosen: &Choices) -> FormDecision {
    for (i, rule) in rules.rules.iter().enumerate() {
        let hit = chosen
            .get(&rule.question_key)
            .is_some_and(|keys| keys.iter().any(|k| rule.answers.contains(k)));
        if hit {
            return match &rule.to {
                RuleTarget::Column(c) => FormDecision::Column {
                    column: Some(c.clone()),
                    rule: Some(i),
                },
                RuleTarget::Discard(reason) => FormDecision::Discard {
                    reason: reason.clone(),
                    rule: i,
                },
            };
        }
    }
    FormDecision::Column {
        column: rules.entry_column.clone(),
        rule: None,
    }
}

/// Checks rules against the form and the board; the error names the field
/// (`rules[i].answers[j]`, …).
///
/// # Errors
/// A message starting with the field's path.
pub fn check_rules(rules: &FormRules, form: &LeadForm, board: &Board) -> Result<(), String> {
    if let Some(c) = &rules.first_contact {
        check_first_contact(c)?;
    }
    if let Some(c) = &rules.entry_column
        && !board.declares(c)
    {
        return Err(format!("entryColumn: {c} is not a column of the board"));
    }
    if rules.rules.len() > MAX_RULES {
        return Err(format!("rules: at most {MAX_RULES}"));
    }
    for (i, rule) in rules.rules.iter().enumerate() {
        let Some(q) = form
            .questions
            .iter()
            .find(|q| q.key == rule.question_key && !q.options.is_empty())
        else {
            return Err(format!(
                "rules[{i}].questionKey: not a multiple-choice question of the form"
            ));
        };
        if rule.answers.is_empty() || rule.answers.len() > MAX_RULE_ANSWERS {
            return Err(format!(
                "rules[{i}].answers: 1 to {MAX_RULE_ANSWERS} option keys"
            ));
        }
        for (j, a) in rule.answers.iter().enumerate() {
            if !q.options.iter().any(|o| &o.key == a) {
                return Err(format!(
                    "rules[{i}].answers[{j}]: not an option of {}",
                    q.key
                ));
            }
        }
        match &rule.to {
            RuleTarget::Column(c) if !board.declares(c) => {
                return Err(format!("rules[{i}].to.column: not a column of the board"));
            }
            RuleTarget::Discard(reason) => {
                check_opaque("reason", reason)
                    .ok()
                    .filter(|()| reason.len() <= MAX_REASON)
                    .ok_or_else(|| {
                        format!(
                            "rules[{i}].to.discard: 1 to {MAX_REASON} of letters, digits and . _ : -"
                        )
                    })?;
            }
            RuleTarget::Column(_) => {}
        }
    }
    Ok(())
}

/// How long a form lead's choices and decision are kept: 90 days, Meta's
/// own reach back (the rules' counts and simulations read 30).
pub const FORM_LEAD_KEPT_MS: i64 = 90 * crate::time::DAY_MS;

/// What adtrail keeps of a form lead for 90 days: ids, the options it
/// chose, and what the rules decided. Never an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormLeadRecord {
    pub site_id: String,
    pub page_id: String,
    /// `unknown` when Meta named no form.
    pub form_id: String,
    pub leadgen_id: String,
    /// Meta's `created_time`.
    pub created_at: i64,
    pub choices: Choices,
    pub decision: FormDecision,
    /// `lead_form` or `lead_form_organic`, with its ad.
    pub origin: String,
    pub ad_id: Option<String>,
    pub adset_id: Option<String>,
    pub campaign_id: Option<String>,
    pub received_at: i64,
    /// When the host returned it as a bad lead, and why.
    pub returned: Option<(i64, String)>,
}

impl FormLeadRecord {
    /// Its lead on the board, unless the rules discarded it.
    pub fn lead_key(&self) -> Option<String> {
        matches!(self.decision, FormDecision::Column { .. })
            .then(|| super::meta_lead_key(&self.leadgen_id))
    }
}

/// What a rule set decides over past leads' choices: a simulation, or the
/// saved rules' counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RulesTally {
    pub total: usize,
    /// Leads no rule matched.
    pub entry: usize,
    pub columns: BTreeMap<String, usize>,
    pub discarded: BTreeMap<String, usize>,
    /// Leads each rule decided, by rule.
    pub rules: Vec<usize>,
}

/// Decides each past lead again with `rules`.
pub fn tally<'a>(rules: &FormRules, past: impl IntoIterator<Item = &'a Choices>) -> RulesTally {
    let mut t = RulesTally {
        rules: vec![0; rules.rules.len()],
        ..RulesTally::default()
    };
    for chosen in past {
        t.total += 1;
        let decision = decide_form_lead(rules, chosen);
        match decision.rule() {
            Some(i) => t.rules[i] += 1,
            None => t.entry += 1,
        }
        match decision {
            FormDecision::Column {
                column: Some(c), ..
            } => *t.columns.entry(c).or_default() += 1,
            FormDecision::Column { column: None, .. } => {}
            FormDecision::Discard { reason, .. } => *t.discarded.entry(reason).or_default() += 1,
        }
    }
    t
}

#[cfg(test)]
#[path = "forms_tests.rs"]
mod tests;
