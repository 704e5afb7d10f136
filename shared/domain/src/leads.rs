//! A lead's rules, without I/O: the leads vocabulary (stages, origins), a
//! lead as stored, and the one decision of what a host's change does: the
//! lead after it, the column it enters, the conversions it queues (once per
//! lead per event, a failed one opened again) and how it moves the cohort
//! counters. The API parses, reads, calls [`decide`], writes and enqueues;
//! the store only maps what is decided to items.

use std::collections::BTreeMap;

use crate::board::Board;
use crate::capi::{Conversion, ConversionStatus, EventName, conversion_ref, event_id, events_for};
use crate::contact::ContactHashes;
use crate::ids::IdError;
use crate::metrics::Counters;
use crate::pixels::PixelReady;
use crate::time::{DAY_MS, utc_day};

/// A lead's stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Open,
    Qualified,
    Won,
    Lost,
}

impl Stage {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "open" => Some(Stage::Open),
            "qualified" => Some(Stage::Qualified),
            "won" => Some(Stage::Won),
            "lost" => Some(Stage::Lost),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Open => "open",
            Stage::Qualified => "qualified",
            Stage::Won => "won",
            Stage::Lost => "lost",
        }
    }
}

/// Checks an `origin`: 1–32 of `a-z0-9_`.
pub fn check_origin(value: &str) -> Result<(), IdError> {
    if value.is_empty()
        || value.len() > 32
        || !value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(IdError::new(
            "origin",
            "must be 1 to 32 of lowercase letters, digits and _",
        ));
    }
    Ok(())
}

/// Paid origins carry the ad that brought the lead.
pub fn is_paid(origin: &str) -> bool {
    matches!(origin, "ctwa_ad" | "lead_form")
}

/// A lead as the rules need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadState {
    pub column: Option<String>,
    pub stage: Stage,
    /// When the last accepted move happened (the host's `occurredAt`).
    pub last_move_at: i64,
}

/// One change the host sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadChange<'a> {
    pub occurred_at: i64,
    pub stage: Option<Stage>,
    pub revenue_cents: Option<i64>,
    /// A column the board declares (an undeclared one was dropped before).
    pub column: Option<&'a str>,
}

/// What a change does to a lead.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    /// The change moves the lead (its time is not before the last move).
    pub accepted: bool,
    /// The column the lead enters, if it moves into another one.
    pub entered: Option<String>,
    pub stage: Option<Stage>,
    /// A sale: a move to `won` with a value.
    pub sale_cents: Option<i64>,
}

/// Applies a change to a lead (`None`: the change records it). A move
/// older than the lead's last move changes nothing, so a late retry never
/// moves a lead back; a move into the column the lead is in enters nothing.
pub fn apply_change(lead: Option<&LeadState>, change: &LeadChange<'_>) -> Applied {
    if let Some(l) = lead
        && change.occurred_at < l.last_move_at
    {
        return Applied::default();
    }
    let current = lead.and_then(|l| l.column.as_deref());
    let entered = change
        .column
        .filter(|c| Some(*c) != current)
        .map(str::to_owned);
    let sale_cents = match (change.stage, change.revenue_cents) {
        (Some(Stage::Won), Some(v)) if v > 0 => Some(v),
        _ => None,
    };
    Applied {
        accepted: true,
        entered,
        stage: change.stage,
        sale_cents,
    }
}

/// How long a column entry is kept: it counts for 30 days.
pub const ENTRY_KEPT_MS: i64 = 35 * DAY_MS;

/// A lead as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub site_id: String,
    pub lead_key: String,
    pub lead_id: String,
    pub origin: String,
    pub ad_id: Option<String>,
    pub label: Option<String>,
    pub column: Option<String>,
    pub stage: Stage,
    pub revenue_cents: Option<i64>,
    /// When the lead first arrived (the host's `occurredAt`).
    pub created_at: i64,
    /// The UTC day it arrived on: its cohort.
    pub cohort_day: i64,
    pub last_move_at: i64,
    /// The reference of each of its conversions ([`conversion_ref`]), by
    /// event.
    pub conversions: BTreeMap<EventName, String>,
    /// The column entries it counts in (`column`, `dayStart`).
    pub entries: Vec<(String, i64)>,
    /// 0 for a lead not yet written.
    pub version: i64,
}

impl Lead {
    fn state(&self) -> LeadState {
        LeadState {
            column: self.column.clone(),
            stage: self.stage,
            last_move_at: self.last_move_at,
        }
    }
}

/// What a host's new lead brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLead {
    pub origin: String,
    pub ad_id: Option<String>,
    pub label: Option<String>,
}

/// The lead a change applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeadInput<'a> {
    /// Not recorded yet: the change records it under a new `lead_id`.
    New {
        lead_id: String,
        lead_key: &'a str,
        lead: &'a NewLead,
    },
    /// Recorded before; `recorded` when the host records it again (its
    /// label may change; its origin and ad stay, the lead counts under
    /// them).
    Known {
        lead: Box<Lead>,
        recorded: Option<&'a NewLead>,
    },
}

/// One change as the host sends it, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadUpdate {
    /// The host's id for the change: its idempotency key.
    pub change_id: String,
    pub occurred_at: i64,
    pub stage: Option<Stage>,
    pub revenue_cents: Option<i64>,
    pub column: Option<String>,
    pub hashes: Option<ContactHashes>,
}

/// What a change is decided against.
#[derive(Debug, Clone, Copy)]
pub struct LeadContext<'a> {
    pub site_id: &'a str,
    /// The site's currency: a sale's.
    pub currency: &'a str,
    pub board: &'a Board,
    /// Whether the site can send now (asked only when the change has
    /// contact data).
    pub pixel: Option<PixelReady>,
    pub now: i64,
}

/// A conversion a change queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConversion {
    pub event_id: String,
    pub event_name: EventName,
    /// When the host says it happened (Meta's `event_time`).
    pub event_time: i64,
    pub value_cents: Option<i64>,
    pub currency: Option<String>,
    pub hashes: ContactHashes,
    /// A failed conversion opened again keeps its row (and reference):
    /// this is the status it had.
    pub reopens: Option<ConversionStatus>,
    /// Its reference ([`conversion_ref`]; a new one: from now and the event
    /// id).
    pub sk: String,
}

/// One accepted lead change, ready to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadWrite {
    /// The lead after the change; `version` is the one it was read at.
    pub lead: Lead,
    pub change_id: String,
    /// The column the lead entered, counted on `now`'s UTC day.
    pub entered: Option<String>,
    pub conversions: Vec<NewConversion>,
    /// What the change does to the lead's cohort counters.
    pub rollup: Counters,
    pub now: i64,
}

impl LeadWrite {
    /// Whether the write records the lead for the first time.
    pub fn creates(&self) -> bool {
        self.lead.version == 0
    }

    /// The references of queued conversions the lead had before: whether
    /// each may go again depends on its row ([`once_per_lead`]).
    pub fn known_refs(&self) -> Vec<String> {
        self.conversions
            .iter()
            .filter(|c| self.lead.conversions.contains_key(&c.event_name))
            .map(|c| c.sk.clone())
            .collect()
    }
}

/// Decides what a change does, or `None` when it changes nothing (a move
/// older than the last, or into the column the lead is in, with nothing
/// else). An undeclared column is ignored, never an error. The events it
/// queues still pass [`once_per_lead`] before the write.
pub fn decide(
    ctx: &LeadContext<'_>,
    input: LeadInput<'_>,
    update: &LeadUpdate,
) -> Option<LeadWrite> {
    let column = update.column.as_deref().filter(|c| ctx.board.declares(c));
    let (lead, recorded) = match input {
        LeadInput::New {
            lead_id,
            lead_key,
            lead,
        } => (None, Err((lead_id, lead_key, lead))),
        LeadInput::Known { lead, recorded } => (Some(*lead), Ok(recorded)),
    };
    let applied = apply_change(
        lead.as_ref().map(Lead::state).as_ref(),
        &LeadChange {
            occurred_at: update.occurred_at,
            stage: update.stage,
            revenue_cents: update.revenue_cents,
            column,
        },
    );
    if !applied.accepted {
        return None;
    }
    let is_new = lead.is_none();
    let before = lead
        .as_ref()
        .map(|l| Counters::of_lead(l.stage, l.revenue_cents));
    let (mut lead, mut changed) = match (lead, recorded) {
        (Some(mut lead), Ok(recorded)) => {
            let relabel = recorded
                .and_then(|r| r.label.clone())
                .filter(|l| Some(l) != lead.label.as_ref());
            let changed = relabel.is_some();
            if relabel.is_some() {
                lead.label = relabel;
            }
            (lead, changed)
        }
        (_, Err((lead_id, lead_key, new))) => {
            let mut lead = new_lead(ctx.site_id, update, lead_id, new);
            lead.lead_key = lead_key.to_owned();
            (lead, true)
        }
        (None, Ok(_)) => return None,
    };
    if let Some(stage) = applied.stage
        && stage != lead.stage
    {
        lead.stage = stage;
        changed = true;
    }
    if let Some(cents) = update.revenue_cents
        && Some(cents) != lead.revenue_cents
    {
        lead.revenue_cents = Some(cents);
        changed = true;
    }
    if let Some(col) = &applied.entered {
        enter(&mut lead, col, ctx.now);
        changed = true;
    }
    let events = events_for(
        &applied,
        is_new,
        ctx.pixel,
        update.hashes.is_some(),
        &ctx.board.map,
    );
    if !changed && events.is_empty() {
        return None;
    }
    lead.last_move_at = lead.last_move_at.max(update.occurred_at);
    let conversions = match &update.hashes {
        None => vec![],
        Some(hashes) => events
            .into_iter()
            .map(|event| new_conversion(ctx, &lead, update, event, applied.sale_cents, hashes))
            .collect(),
    };
    // The lead's cohort counters move with its stage and its sale.
    let rollup = Counters::delta(
        before,
        Some(Counters::of_lead(lead.stage, lead.revenue_cents)),
    );
    Some(LeadWrite {
        lead,
        change_id: update.change_id.clone(),
        entered: applied.entered,
        conversions,
        rollup,
        now: ctx.now,
    })
}

fn new_lead(site_id: &str, update: &LeadUpdate, lead_id: String, new: &NewLead) -> Lead {
    Lead {
        site_id: site_id.to_owned(),
        lead_key: String::new(),
        lead_id,
        origin: new.origin.clone(),
        ad_id: new.ad_id.clone(),
        label: new.label.clone(),
        column: None,
        stage: Stage::Open,
        revenue_cents: None,
        created_at: update.occurred_at,
        cohort_day: utc_day(update.occurred_at),
        last_move_at: update.occurred_at,
        conversions: BTreeMap::new(),
        entries: vec![],
        version: 0,
    }
}

/// The lead enters `column` on `now`'s UTC day. Entries count for 30 days:
/// older ones leave the lead's list (their items expire by themselves), so
/// the list stays bounded.
fn enter(lead: &mut Lead, column: &str, now: i64) {
    lead.column = Some(column.to_owned());
    let day = utc_day(now);
    lead.entries.retain(|(_, d)| *d + ENTRY_KEPT_MS > day);
    if !lead.entries.iter().any(|(c, d)| c == column && *d == day) {
        lead.entries.push((column.to_owned(), day));
    }
}

fn new_conversion(
    ctx: &LeadContext<'_>,
    lead: &Lead,
    update: &LeadUpdate,
    event: EventName,
    sale_cents: Option<i64>,
    hashes: &ContactHashes,
) -> NewConversion {
    let id = event_id(&lead.lead_id, event);
    let purchase = event == EventName::Purchase;
    NewConversion {
        sk: lead
            .conversions
            .get(&event)
            .cloned()
            .unwrap_or_else(|| conversion_ref(ctx.now, &id)),
        event_id: id,
        event_name: event,
        event_time: update.occurred_at,
        value_cents: sale_cents.filter(|_| purchase),
        currency: purchase.then(|| ctx.currency.to_owned()),
        hashes: hashes.clone(),
        reopens: None,
    }
}

/// Once per lead per event: of the conversions a write queues, one whose
/// row (`existing`, read by [`LeadWrite::known_refs`]) is pending or sent is
/// dropped; one that failed for good is opened again. The lead then
/// references every conversion it queues.
pub fn once_per_lead(write: &mut LeadWrite, existing: &[Conversion]) {
    write
        .conversions
        .retain_mut(|c| match existing.iter().find(|e| e.sk == c.sk) {
            None => true,
            Some(e) if e.status == ConversionStatus::Failed => {
                c.reopens = Some(ConversionStatus::Failed);
                true
            }
            Some(_) => false,
        });
    for c in &write.conversions {
        write.lead.conversions.insert(c.event_name, c.sk.clone());
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::capi::tests::row as pending_row;

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

    const H: &str = "5f2b8b0f3c6a4e1e9d7c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e";
    const NOW: i64 = 1_782_820_800_000;

    fn board() -> Board {
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
        }
    }

    fn update(
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
        }
    }

    fn ctx(board: &Board, ready: bool) -> LeadContext<'_> {
        LeadContext {
            site_id: "loja-x",
            currency: "BRL",
            board,
            pixel: ready.then_some(PixelReady {
                send_lead_event: true,
            }),
            now: NOW,
        }
    }

    const NEW: NewLead = NewLead {
        origin: String::new(),
        ad_id: None,
        label: None,
    };

    fn recorded(board: &Board) -> Lead {
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

    fn known(lead: &Lead) -> LeadInput<'static> {
        LeadInput::Known {
            lead: Box::new(lead.clone()),
            recorded: None,
        }
    }

    fn events(w: &LeadWrite) -> Vec<EventName> {
        w.conversions.iter().map(|c| c.event_name).collect()
    }

    #[test]
    fn a_new_lead_is_recorded_in_its_column_with_its_cohort_and_lead_event() {
        let b = board();
        let new = NewLead {
            origin: "ctwa_ad".into(),
            ad_id: Some("123".into()),
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
}
