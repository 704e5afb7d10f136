//! Where a lead change's events go: the contact each target's hashes are
//! made from (the plain `contact`, with `meta`'s hashes where a platform's
//! rule is Meta's), and the rows for the site's destinations, once per
//! lead, destination and event.

use super::Lead;
use super::decide::{LeadContext, LeadUpdate};
use crate::capi::{EventName, event_id};
use crate::contact::ContactHashes;
use crate::events::{ActionSource, Contact, EventRow, PostedEvent, RowLead, match_data};
use crate::identifiers::Platform;

impl LeadUpdate {
    /// The contact every destination's row is made from: the plain one,
    /// with `meta`'s first phone and external id as already hashed values
    /// where the plain one lacks them (they reach only the platforms whose
    /// rule is Meta's: [`crate::events::takes_prehashed`]).
    pub(super) fn contact(&self) -> Contact {
        let mut contact = self.contact.clone().unwrap_or_default();
        if let Some(meta) = &self.hashes {
            if contact.phone.is_none() {
                contact.phone = meta.ph.first().cloned();
            }
            if contact.external_id.is_none() {
                contact.external_id = meta.external_id.clone();
            }
        }
        contact
    }

    /// What the pixel's rows hold: `meta`'s hashes and Meta's hashes of the
    /// plain contact, together.
    pub(super) fn pixel_hashes(&self, country: Option<&str>) -> ContactHashes {
        let mut hashes = match &self.contact {
            Some(c) => match_data(Platform::Meta, c, country),
            None => ContactHashes::default(),
        };
        if let Some(meta) = &self.hashes {
            for ph in &meta.ph {
                if !hashes.ph.contains(ph) {
                    hashes.ph.push(ph.clone());
                }
            }
            if meta.external_id.is_some() {
                hashes.external_id = meta.external_id.clone();
            }
        }
        hashes
    }
}

/// The rows of `events` for each destination that sends them, has not had
/// them from this lead and gets something to match a person on; the lead
/// records each.
pub(super) fn route(
    ctx: &LeadContext<'_>,
    lead: &mut Lead,
    update: &LeadUpdate,
    events: &[EventName],
    sale_cents: Option<i64>,
    contact: &Contact,
) -> Vec<EventRow> {
    let mut rows = vec![];
    for &event in events {
        let purchase = event == EventName::Purchase;
        let posted = PostedEvent {
            event_id: event_id(&lead.lead_id, event),
            event,
            occurred_at: update.occurred_at,
            // A lead's change is the host's conversation with the person.
            action_source: ActionSource::Chat,
            source_url: None,
            value_cents: sale_cents.filter(|_| purchase),
            currency: purchase.then(|| ctx.currency.to_owned()),
            order_id: None,
            contact: contact.clone(),
        };
        for d in ctx.targets.destinations {
            let slug = d.slug.as_str();
            let queued = lead
                .routed
                .get(slug)
                .is_some_and(|e| e.contains_key(&event));
            if queued || !d.account.sends(event) {
                continue;
            }
            let platform = d.account.platform();
            let mut row = EventRow::of(&posted, slug, Some(slug), platform, ctx.country, ctx.now);
            if row.hashes.is_empty() {
                // Nothing this platform can match a person on.
                continue;
            }
            row.lead = Some(RowLead {
                lead_id: lead.lead_id.clone(),
                lead_key: lead.lead_key.clone(),
            });
            lead.routed
                .entry(slug.to_owned())
                .or_default()
                .insert(event, row.sk.clone());
            rows.push(row);
        }
    }
    rows
}
