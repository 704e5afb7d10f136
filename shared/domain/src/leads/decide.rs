//! The one decision of what a host's change does to a lead: the lead after
//! it, the column it enters, the conversions it queues (once per lead per
//! event, a failed one opened again) and how it moves the cohort counters.
//!
//! A change's events go to the site's pixel (when it can send) and to each
//! of its destinations that sends them (once per lead, destination and
//! event), each row with that platform's own hashes of the change's
//! contact. The rows are part of the change's one transaction, so a
//! replayed change (`ChangeSeen`) has nothing left to do.

use std::collections::BTreeMap;

use super::route::route;
use super::{Applied, ENTRY_KEPT_MS, Lead, LeadChange, Stage, apply_change};
use crate::board::Board;
use crate::capi::{Conversion, ConversionStatus, EventName, conversion_ref, event_id, events_for};
use crate::contact::ContactHashes;
use crate::destinations::Destination;
use crate::events::{Contact, EventRow};
use crate::leadads::meta_lead_id;
use crate::metrics::Counters;
use crate::pixels::PixelReady;
use crate::time::utc_day;

/// What a host's new lead brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLead {
    pub origin: String,
    pub ad_id: Option<String>,
    /// A Lead Ads lead's form.
    pub form_id: Option<String>,
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
    /// `meta: {ph, externalId}`: hashes the host made by Meta's rule.
    pub hashes: Option<ContactHashes>,
    /// `contact`: plain, checked; each target gets its own hashes of it.
    pub contact: Option<Contact>,
}

/// What a change is decided against.
#[derive(Debug, Clone, Copy)]
pub struct LeadContext<'a> {
    pub site_id: &'a str,
    /// The site's currency: a sale's.
    pub currency: &'a str,
    pub board: &'a Board,
    /// The site's country: a phone's when it has no country code.
    pub country: Option<&'a str>,
    pub targets: LeadTargets<'a>,
    pub now: i64,
}

/// Where a lead's events go (read only when the change has contact data).
#[derive(Debug, Clone, Copy, Default)]
pub struct LeadTargets<'a> {
    /// Whether the site's pixel can send now.
    pub pixel: Option<PixelReady>,
    /// Whether a new lead sends `Lead`: the pixel's `sendLeadEvent`, yes
    /// for a site without one.
    pub send_lead_event: bool,
    /// The site's destinations that take events now.
    pub destinations: &'a [Destination],
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
    /// Its events' rows for the site's destinations, none queued before.
    pub routed: Vec<EventRow>,
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
    let known = match &input {
        LeadInput::New { .. } => None,
        LeadInput::Known { lead, .. } => Some(lead.state()),
    };
    let applied = apply_change(
        known.as_ref(),
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
    let is_new = known.is_none();
    let before = match &input {
        LeadInput::New { .. } => None,
        LeadInput::Known { lead, .. } => Some(Counters::of_lead(lead.stage, lead.revenue_cents)),
    };
    let (mut lead, mut changed) = lead_to_change(ctx, input, update);
    changed |= move_lead(&mut lead, &applied, update.revenue_cents, ctx.now);
    let contact = update.contact();
    // A Lead Ads lead is matched at Meta on its lead id (Conversion Leads):
    // its later events need no contact data, and its first, `Lead`, is
    // Meta's own.
    let form_lead = meta_lead_id(&lead.lead_key).is_some();
    let events = events_for(
        &applied,
        is_new && !form_lead,
        ctx.targets.send_lead_event,
        contact.has_identity() || form_lead,
        &ctx.board.map,
    );
    let conversions = pixel_conversions(ctx, &lead, update, &events, applied.sale_cents);
    let routed = route(
        ctx,
        &mut lead,
        update,
        &events,
        applied.sale_cents,
        &contact,
    );
    if !changed && conversions.is_empty() && routed.is_empty() {
        return None;
    }
    lead.last_move_at = lead.last_move_at.max(update.occurred_at);
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
        routed,
        rollup,
        now: ctx.now,
    })
}

/// The lead a change applies to, and whether recording it again relabels
/// it: the known lead, or a new one under its new id.
fn lead_to_change(
    ctx: &LeadContext<'_>,
    input: LeadInput<'_>,
    update: &LeadUpdate,
) -> (Lead, bool) {
    match input {
        LeadInput::Known { mut lead, recorded } => {
            let relabel = recorded
                .and_then(|r| r.label.clone())
                .filter(|l| Some(l) != lead.label.as_ref());
            let changed = relabel.is_some();
            if relabel.is_some() {
                lead.label = relabel;
            }
            (*lead, changed)
        }
        LeadInput::New {
            lead_id,
            lead_key,
            lead: new,
        } => {
            let mut lead = new_lead(ctx.site_id, update, lead_id, new);
            lead.lead_key = lead_key.to_owned();
            (lead, true)
        }
    }
}

/// The pixel's conversions of a change's events: when the pixel can send
/// and there is someone to match (contact data, or a Lead Ads lead's id).
fn pixel_conversions(
    ctx: &LeadContext<'_>,
    lead: &Lead,
    update: &LeadUpdate,
    events: &[EventName],
    sale_cents: Option<i64>,
) -> Vec<NewConversion> {
    let hashes = update.pixel_hashes(ctx.country);
    let matchable = !hashes.is_empty() || meta_lead_id(&lead.lead_key).is_some();
    if ctx.targets.pixel.is_none() || !matchable {
        return vec![];
    }
    events
        .iter()
        .map(|event| new_conversion(ctx, lead, update, *event, sale_cents, &hashes))
        .collect()
}

/// Moves the lead as the change says: its stage, its sale, the column it
/// enters. Answers whether anything changed.
fn move_lead(lead: &mut Lead, applied: &Applied, revenue_cents: Option<i64>, now: i64) -> bool {
    let mut changed = false;
    if let Some(stage) = applied.stage
        && stage != lead.stage
    {
        lead.stage = stage;
        changed = true;
    }
    if let Some(cents) = revenue_cents
        && Some(cents) != lead.revenue_cents
    {
        lead.revenue_cents = Some(cents);
        changed = true;
    }
    if let Some(col) = &applied.entered {
        enter(lead, col, now);
        changed = true;
    }
    changed
}

fn new_lead(site_id: &str, update: &LeadUpdate, lead_id: String, new: &NewLead) -> Lead {
    Lead {
        site_id: site_id.to_owned(),
        lead_key: String::new(),
        lead_id,
        origin: new.origin.clone(),
        ad_id: new.ad_id.clone(),
        form_id: new.form_id.clone(),
        label: new.label.clone(),
        column: None,
        stage: Stage::Open,
        revenue_cents: None,
        created_at: update.occurred_at,
        cohort_day: utc_day(update.occurred_at),
        last_move_at: update.occurred_at,
        conversions: BTreeMap::new(),
        routed: BTreeMap::new(),
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
