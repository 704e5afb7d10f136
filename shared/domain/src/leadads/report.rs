//! The forms report's arithmetic, per form: its leads over the range, where
//! the rules sent them (the entry, each column, each discard reason), the
//! returned ones, and the board's counters of those that went there
//! (qualified, won, revenue: the same rule as the other reports).

use std::collections::BTreeMap;

use super::{FormDecision, FormLeadRecord};
use crate::leads::Lead;
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
    /// The board's counters of the leads that went there, as they are now.
    pub board: Counters,
}

/// Sums a form's records; `on_board` finds each record's lead (absent when
/// discarded, or removed from the board since).
pub fn form_figures<'a>(
    records: impl IntoIterator<Item = &'a FormLeadRecord>,
    on_board: impl Fn(&FormLeadRecord) -> Option<&'a Lead>,
) -> FormFigures {
    let mut f = FormFigures::default();
    for r in records {
        f.leads += 1;
        f.returned += i64::from(r.returned.is_some());
        match &r.decision {
            FormDecision::Column { column, rule } => {
                if rule.is_none() {
                    f.entry += 1;
                }
                if let Some(c) = column {
                    *f.columns.entry(c.clone()).or_default() += 1;
                }
                if let Some(lead) = on_board(r) {
                    let mut c = Counters::of_lead(lead.stage, lead.revenue_cents);
                    // `leads` counts the form's leads, discarded ones too.
                    c.leads = 0;
                    f.board.add(&c);
                }
            }
            FormDecision::Discard { reason, .. } => {
                *f.discarded.entry(reason.clone()).or_default() += 1;
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leads::Stage;

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
        let board = [
            ("1", lead(Stage::Open, None)),
            ("2", lead(Stage::Qualified, None)),
            ("3", lead(Stage::Won, Some(45_990))),
        ];
        let f = form_figures(&records, |r| {
            board
                .iter()
                .find(|(id, _)| *id == r.leadgen_id)
                .map(|(_, l)| l)
        });
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
}
