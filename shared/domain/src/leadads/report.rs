//! The forms report's arithmetic, per form: its leads over the range, where
//! the rules sent them (the entry, each column, each discard reason), the
//! returned ones (counters of the form's days, moved when a lead is
//! recorded or returned), and the board's counters of those that went
//! there (qualified, won, revenue: the cohort rollups under the form, the
//! same rule as the other reports).

use std::collections::BTreeMap;

use super::FormDecision;
use crate::metrics::Counters;

/// One form's figures.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FormFigures {
    pub leads: i64,
    /// Leads no rule matched.
    pub entry: i64,
    pub columns: BTreeMap<String, i64>,
    pub discarded: BTreeMap<String, i64>,
    pub returned: i64,
    /// The board's counters of the leads that went there, as they are now
    /// (their cohorts' counters under the form).
    pub board: Counters,
}

/// One of a form's day counters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum FormCount {
    /// A form lead arrived (discarded ones too).
    Lead,
    /// No rule matched it: the entry column.
    Entry,
    /// The rules sent it to this column.
    Column(String),
    /// A rule discarded it for this reason.
    Discarded(String),
    /// The host returned it as a bad lead.
    Returned,
}

impl FormCount {
    /// What a form lead adds to its form's day when it is recorded: one
    /// lead, and where the rules sent it.
    pub fn of_decision(decision: &FormDecision) -> Vec<FormCount> {
        let mut counts = vec![FormCount::Lead];
        match decision {
            FormDecision::Column { column, rule } => {
                if rule.is_none() {
                    counts.push(FormCount::Entry);
                }
                if let Some(c) = column {
                    counts.push(FormCount::Column(c.clone()));
                }
            }
            FormDecision::Discard { reason, .. } => {
                counts.push(FormCount::Discarded(reason.clone()));
            }
        }
        counts
    }
}

impl FormFigures {
    /// Adds `n` to one counter.
    pub fn add(&mut self, count: &FormCount, n: i64) {
        match count {
            FormCount::Lead => self.leads += n,
            FormCount::Entry => self.entry += n,
            FormCount::Column(c) => *self.columns.entry(c.clone()).or_default() += n,
            FormCount::Discarded(r) => *self.discarded.entry(r.clone()).or_default() += n,
            FormCount::Returned => self.returned += n,
        }
    }

    /// Adds the board's counters of the form's leads (a cohort's rollup
    /// under the form); `leads` stays the form's own count.
    pub fn add_board(&mut self, c: &Counters) {
        self.board.qualified += c.qualified;
        self.board.won += c.won;
        self.board.revenue_cents += c.revenue_cents;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leadads::FormLeadRecord;
    use crate::leads::{Lead, Stage};

    fn record(id: &str, decision: FormDecision, returned: bool) -> FormLeadRecord {
        FormLeadRecord {
            site_id: "loja-x".into(),
            page_id: "1".into(),
            form_id: "2".into(),
            leadgen_id: id.into(),
            created_at: 0,
            choices: Default::default(),
            decision,
            origin: "lead_form".into(),
            ad_id: None,
            adset_id: None,
            campaign_id: None,
            received_at: 0,
            returned: returned.then(|| (1, "spam".to_owned())),
        }
    }

    fn lead(stage: Stage, revenue: Option<i64>) -> Lead {
        Lead {
            site_id: "loja-x".into(),
            lead_key: "k".into(),
            lead_id: "l".into(),
            origin: "lead_form".into(),
            ad_id: None,
            form_id: None,
            label: None,
            column: None,
            stage,
            revenue_cents: revenue,
            created_at: 0,
            cohort_day: 0,
            last_move_at: 0,
            conversions: Default::default(),
            routed: Default::default(),
            entries: vec![],
            version: 1,
        }
    }

    #[test]
    fn figures_count_decisions_returns_and_the_board() {
        let col = |c: &str, rule| FormDecision::Column {
            column: Some(c.into()),
            rule,
        };
        let records = [
            record("1", col("novo", None), false),
            record("2", col("quente", Some(1)), true),
            record("3", col("quente", Some(1)), false),
            record(
                "4",
                FormDecision::Discard {
                    reason: "curious".into(),
                    rule: 0,
                },
                false,
            ),
        ];
        // The board's cohorts under the form: what the three leads on it
        // are now.
        let board = [
            lead(Stage::Open, None),
            lead(Stage::Qualified, None),
            lead(Stage::Won, Some(45_990)),
        ];
        let mut f = FormFigures::default();
        for r in &records {
            for c in FormCount::of_decision(&r.decision) {
                f.add(&c, 1);
            }
            if r.returned.is_some() {
                f.add(&FormCount::Returned, 1);
            }
        }
        for l in &board {
            f.add_board(&Counters::of_lead(l.stage, l.revenue_cents));
        }
        assert_eq!((f.leads, f.entry, f.returned), (4, 1, 1));
        assert_eq!(f.columns, [("novo".into(), 1), ("quente".into(), 2)].into());
        assert_eq!(f.discarded, [("curious".into(), 1)].into());
        assert_eq!(
            f.board,
            Counters {
                leads: 0,
                qualified: 2,
                won: 1,
                revenue_cents: 45_990
            }
        );
    }

    #[test]
    fn a_decision_counts_one_lead_and_where_the_rules_sent_it() {
        use FormCount::*;
        let entry = FormDecision::Column {
            column: Some("novo".into()),
            rule: None,
        };
        assert_eq!(
            FormCount::of_decision(&entry),
            [Lead, Entry, Column("novo".into())]
        );
        let by_rule = FormDecision::Column {
            column: None,
            rule: Some(2),
        };
        assert_eq!(FormCount::of_decision(&by_rule), [Lead]);
        let discarded = FormDecision::Discard {
            reason: "spam".into(),
            rule: 0,
        };
        assert_eq!(
            FormCount::of_decision(&discarded),
            [Lead, Discarded("spam".into())]
        );
    }
}
