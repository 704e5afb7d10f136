//! Tests of [`super`]: table-driven, one row per rule.

use super::*;
use crate::board::Board;
use crate::capi::tests::row as pending_row;
use crate::capi::{Conversion, ConversionStatus, EventName, conversion_ref, event_id};
use crate::contact::ContactHashes;
use crate::metrics::Counters;
use crate::time::utc_day;

pub(crate) fn lead(column: Option<&str>, at: i64) -> LeadState {
    LeadState {
        column: column.map(str::to_owned),
        stage: Stage::Open,
        last_move_at: at,
    }
}

pub(crate) fn change(
    at: i64,
    stage: Option<Stage>,
    cents: Option<i64>,
    column: Option<&str>,
) -> LeadChange<'_> {
    LeadChange {
        occurred_at: at,
        stage,
        revenue_cents: cents,
        column,
    }
}

#[test]
fn moves_older_than_the_last_or_into_the_same_column_change_nothing() {
    let l = lead(Some("novo"), 100);
    assert!(!apply_change(Some(&l), &change(99, None, None, Some("agendado"))).accepted);
    let same = apply_change(Some(&l), &change(101, None, None, Some("novo")));
    assert!(same.accepted);
    assert_eq!(same.entered, None);
    let moved = apply_change(Some(&l), &change(100, None, None, Some("agendado")));
    assert_eq!(moved.entered.as_deref(), Some("agendado"));
    let new = apply_change(None, &change(5, None, None, Some("novo")));
    assert_eq!(new.entered.as_deref(), Some("novo"));
}

// `decide`: the whole lead decision, pure.

pub(super) const H: &str = "5f2b8b0f3c6a4e1e9d7c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e";
pub(super) const NOW: i64 = 1_782_820_800_000;

pub(super) fn board() -> Board {
    Board {
        columns: Some(
            ["novo", "agendado", "fechado"]
                .map(|k| crate::board::Column {
                    key: k.into(),
                    name: k.into(),
                    group: None,
                    color: None,
                })
                .to_vec(),
        ),
        map: [("agendado".to_owned(), EventName::Schedule)].into(),
        send_lead_event: true,
        version: 1,
    }
}

fn hashes() -> ContactHashes {
    ContactHashes {
        ph: vec![H.into()],
        external_id: None,
        ..ContactHashes::default()
    }
}

pub(super) fn update(
    at: i64,
    stage: Option<Stage>,
    cents: Option<i64>,
    column: Option<&str>,
    meta: bool,
) -> LeadUpdate {
    LeadUpdate {
        change_id: format!("c-{at}"),
        occurred_at: at,
        stage,
        revenue_cents: cents,
        column: column.map(str::to_owned),
        hashes: meta.then(hashes),
        contact: None,
    }
}

pub(super) fn ctx(board: &Board, ready: bool) -> LeadContext<'_> {
    super::route_tests::context(board, &[], ready)
}

const NEW: NewLead = NewLead {
    origin: String::new(),
    ad_id: None,
    form_id: None,
    label: None,
};

pub(super) fn recorded(board: &Board) -> Lead {
    let new = NewLead {
        origin: "organic".into(),
        ..NEW
    };
    let input = LeadInput::New {
        lead_id: "lead-1".into(),
        lead_key: "k1",
        lead: &new,
    };
    let mut lead = decide(
        &ctx(board, false),
        input,
        &update(NOW - 10, None, None, Some("novo"), false),
    )
    .expect("a new lead is written")
    .lead;
    lead.version = 1;
    lead
}

pub(super) fn known(lead: &Lead) -> LeadInput<'static> {
    LeadInput::Known {
        lead: Box::new(lead.clone()),
        recorded: None,
    }
}

pub(super) fn events(w: &LeadWrite) -> Vec<EventName> {
    w.conversions.iter().map(|c| c.event_name).collect()
}

#[test]
fn a_new_lead_is_recorded_in_its_column_with_its_cohort_and_lead_event() {
    let b = board();
    let new = NewLead {
        origin: "ctwa_ad".into(),
        ad_id: Some("123".into()),
        form_id: None,
        label: Some("Ana".into()),
    };
    let input = LeadInput::New {
        lead_id: "lead-1".into(),
        lead_key: "k1",
        lead: &new,
    };
    let w = decide(
        &ctx(&b, true),
        input,
        &update(NOW - 5, None, None, Some("novo"), true),
    )
    .unwrap();
    assert!(w.creates());
    assert_eq!(w.lead.lead_key, "k1");
    assert_eq!(w.lead.site_id, "loja-x");
    assert_eq!(w.lead.column.as_deref(), Some("novo"));
    assert_eq!(w.lead.cohort_day, utc_day(NOW - 5));
    assert_eq!(w.lead.entries, vec![("novo".to_owned(), utc_day(NOW))]);
    assert_eq!(w.entered.as_deref(), Some("novo"));
    assert_eq!(events(&w), vec![EventName::Lead]);
    let c = &w.conversions[0];
    assert_eq!(c.event_id, event_id("lead-1", EventName::Lead));
    assert_eq!(c.sk, conversion_ref(NOW, &c.event_id));
    assert_eq!((c.value_cents, c.currency.as_deref()), (None, None));
    assert_eq!(w.rollup, Counters::of_lead(Stage::Open, None));
}

#[test]
fn the_lead_decision_row_by_row() {
    let b = board();
    let lead = recorded(&b);
    let ready = ctx(&b, true);
    // (change, expected events, lead column after, stage after, writes)
    type Row<'a> = (LeadUpdate, Vec<EventName>, Option<&'a str>, Stage, bool);
    let rows: Vec<Row> = vec![
        // A sale with contact data: Purchase, in the site's currency.
        (
            update(NOW, Some(Stage::Won), Some(45_990), None, true),
            vec![EventName::Purchase],
            Some("novo"),
            Stage::Won,
            true,
        ),
        // A mapped column: its event.
        (
            update(NOW, None, None, Some("agendado"), true),
            vec![EventName::Schedule],
            Some("agendado"),
            Stage::Open,
            true,
        ),
        // An undeclared column is ignored, never an error: nothing changes.
        (
            update(NOW, None, None, Some("sumiu"), true),
            vec![],
            Some("novo"),
            Stage::Open,
            false,
        ),
        // The column the lead is in: nothing.
        (
            update(NOW, None, None, Some("novo"), true),
            vec![],
            Some("novo"),
            Stage::Open,
            false,
        ),
        // Older than the last move: nothing.
        (
            update(NOW - 20, Some(Stage::Won), Some(10), None, true),
            vec![],
            Some("novo"),
            Stage::Open,
            false,
        ),
        // Without contact data the lead moves, nothing is queued.
        (
            update(NOW, Some(Stage::Won), Some(10), Some("agendado"), false),
            vec![],
            Some("agendado"),
            Stage::Won,
            true,
        ),
        // Qualified alone sends nothing but moves the counters.
        (
            update(NOW, Some(Stage::Qualified), None, None, true),
            vec![],
            Some("novo"),
            Stage::Qualified,
            true,
        ),
    ];
    for (u, want, column, stage, writes) in rows {
        let got = decide(&ready, known(&lead), &u);
        assert_eq!(got.is_some(), writes, "{u:?}");
        let Some(w) = got else { continue };
        assert_eq!(events(&w), want, "{u:?}");
        assert_eq!(w.lead.column.as_deref(), column, "{u:?}");
        assert_eq!(w.lead.stage, stage, "{u:?}");
        assert_eq!(w.lead.version, 1, "the version it was read at");
        assert_eq!(w.lead.last_move_at, u.occurred_at.max(lead.last_move_at));
        if let Some(p) = w
            .conversions
            .iter()
            .find(|c| c.event_name == EventName::Purchase)
        {
            assert_eq!(
                (p.value_cents, p.currency.as_deref()),
                (Some(45_990), Some("BRL"))
            );
        }
    }
    // A pixel that is not ready queues nothing, and the lead still moves.
    let w = decide(
        &ctx(&b, false),
        known(&lead),
        &update(NOW, None, None, Some("agendado"), true),
    )
    .unwrap();
    assert!(w.conversions.is_empty());
    assert_eq!(w.lead.column.as_deref(), Some("agendado"));
}

#[test]
fn recording_a_known_lead_again_changes_only_its_label() {
    let b = board();
    let lead = recorded(&b);
    let same = NewLead {
        origin: "ctwa_ad".into(),
        ..NEW
    };
    let input = LeadInput::Known {
        lead: Box::new(lead.clone()),
        recorded: Some(&same),
    };
    assert_eq!(
        decide(&ctx(&b, true), input, &update(NOW, None, None, None, false)),
        None
    );
    let relabelled = NewLead {
        label: Some("Ana Maria".into()),
        ..same
    };
    let input = LeadInput::Known {
        lead: Box::new(lead.clone()),
        recorded: Some(&relabelled),
    };
    let w = decide(&ctx(&b, true), input, &update(NOW, None, None, None, false)).unwrap();
    assert_eq!(w.lead.label.as_deref(), Some("Ana Maria"));
    assert_eq!(w.lead.origin, "organic", "the origin stays");
    assert!(w.rollup.is_zero());
}

#[test]
fn each_event_goes_once_per_lead_and_a_failed_one_is_opened_again() {
    let b = board();
    let mut lead = recorded(&b);
    let sched = event_id(&lead.lead_id, EventName::Schedule);
    let old_ref = conversion_ref(NOW - 1_000, &sched);
    lead.conversions
        .insert(EventName::Schedule, old_ref.clone());
    let mut w = decide(
        &ctx(&b, true),
        known(&lead),
        &update(NOW, None, None, Some("agendado"), true),
    )
    .unwrap();
    assert_eq!(w.conversions[0].sk, old_ref, "the row it had");
    assert_eq!(w.known_refs(), vec![old_ref.clone()]);
    let row = |status| Conversion {
        sk: old_ref.clone(),
        event_id: sched.clone(),
        event_name: EventName::Schedule,
        status,
        ..pending_row(3, None, None)
    };
    for (status, kept) in [
        (ConversionStatus::Pending, false),
        (ConversionStatus::Sent, false),
        (ConversionStatus::Failed, true),
    ] {
        let mut w = w.clone();
        once_per_lead(&mut w, &[row(status)]);
        assert_eq!(w.conversions.len(), usize::from(kept), "{status:?}");
        if kept {
            assert_eq!(w.conversions[0].reopens, Some(ConversionStatus::Failed));
        }
    }
    once_per_lead(&mut w, &[]);
    assert_eq!(
        w.lead.conversions[&EventName::Schedule],
        old_ref,
        "the lead references it"
    );
}

proptest::proptest! {
    /// Whatever the changes and their order, a lead's counters are the
    /// sum of the rollups its writes carry, no event is queued twice
    /// for it, and its last move never goes back.
    #[test]
    fn counters_follow_the_lead_and_events_go_once(
        changes in proptest::collection::vec(
            (0i64..50, proptest::option::of(0usize..4), proptest::option::of(0i64..100_000), proptest::option::of(0usize..4), proptest::bool::ANY),
            1..20,
        )
    ) {
        let b = board();
        let stages = [Stage::Open, Stage::Qualified, Stage::Won, Stage::Lost];
        let columns = ["novo", "agendado", "fechado", "sumiu"];
        let mut lead: Option<Lead> = None;
        let mut total = Counters::default();
        let mut queued: Vec<EventName> = vec![];
        let mut rows: Vec<Conversion> = vec![];
        let new = NewLead { origin: "organic".into(), ..NEW };
        for (at, stage, cents, column, meta) in changes {
            let u = update(NOW - 1_000 + at, stage.map(|i| stages[i]), cents, column.map(|i| columns[i]), meta);
            let input = match &lead {
                None => LeadInput::New { lead_id: "lead-p".into(), lead_key: "kp", lead: &new },
                Some(l) => LeadInput::Known { lead: Box::new(l.clone()), recorded: None },
            };
            let before = lead.as_ref().map(|l| l.last_move_at);
            let Some(mut w) = decide(&ctx(&b, true), input, &u) else { continue };
            once_per_lead(&mut w, &rows);
            if let Some(before) = before {
                proptest::prop_assert!(w.lead.last_move_at >= before);
            }
            total = Counters {
                leads: total.leads + w.rollup.leads,
                qualified: total.qualified + w.rollup.qualified,
                won: total.won + w.rollup.won,
                revenue_cents: total.revenue_cents + w.rollup.revenue_cents,
            };
            for c in &w.conversions {
                proptest::prop_assert!(!queued.contains(&c.event_name), "{:?} queued twice", c.event_name);
                queued.push(c.event_name);
                rows.push(Conversion {
                    sk: c.sk.clone(),
                    event_id: c.event_id.clone(),
                    event_name: c.event_name,
                    ..pending_row(0, None, None)
                });
            }
            let mut l = w.lead;
            l.version += 1;
            lead = Some(l);
        }
        if let Some(l) = lead {
            proptest::prop_assert_eq!(total, Counters::of_lead(l.stage, l.revenue_cents));
        }
    }
}
