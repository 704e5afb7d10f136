//! Sample outbox rows for the fault run and the bench: a lead of the sample
//! with its four events queued, written exactly as the API writes a lead
//! change (one transaction with its conversions), and a posted event's row
//! for the pixel, so both exercise the real send path without paying for
//! thousands of API calls on moto.

use adtrail_domain::capi::conversion_ref;
use adtrail_domain::capi::{EventName, event_id};
use adtrail_domain::contact::{ContactHashes, sha256_hex};
use adtrail_domain::destinations::PIXEL_SLUG;
use adtrail_domain::events::{ActionSource, EventRow, row_ref};
use adtrail_domain::identifiers::Platform;
use adtrail_domain::leads::Stage;
use adtrail_domain::leads::{Lead, LeadWrite, NewConversion};
use adtrail_domain::time::utc_day;
use adtrail_store::queue::SendMessage;

/// Contact number `i`'s hashes: a phone and the host's id.
fn contact(i: usize) -> ContactHashes {
    ContactHashes {
        ph: vec![sha256_hex(&format!("5511{i:09}"))],
        external_id: Some(sha256_hex(&format!("contact-{i}"))),
        ..ContactHashes::default()
    }
}

/// Lead number `i` of `site`, won, with `events` of its four events queued
/// at `now`.
pub fn lead_write(site: &str, currency: &str, i: usize, events: usize, now: i64) -> LeadWrite {
    let lead_id = uuid::Uuid::new_v4().to_string();
    let hashes = contact(i);
    let value = 10_000 + i as i64;
    let conversions: Vec<NewConversion> = EventName::LEAD_EVENTS
        .into_iter()
        .take(events)
        .map(|e| {
            let id = event_id(&lead_id, e);
            let purchase = e == EventName::Purchase;
            NewConversion {
                sk: conversion_ref(now, &id),
                event_id: id,
                event_name: e,
                event_time: now,
                value_cents: purchase.then_some(value),
                currency: purchase.then(|| currency.to_owned()),
                hashes: hashes.clone(),
                reopens: None,
            }
        })
        .collect();
    LeadWrite {
        lead: Lead {
            site_id: site.to_owned(),
            lead_key: format!("sample-{i}"),
            lead_id,
            origin: "organic".into(),
            ad_id: None,
            form_id: None,
            label: None,
            column: None,
            stage: Stage::Won,
            revenue_cents: Some(value),
            created_at: now,
            cohort_day: utc_day(now),
            last_move_at: now,
            conversions: conversions
                .iter()
                .map(|c| (c.event_name, c.sk.clone()))
                .collect(),
            routed: Default::default(),
            entries: vec![],
            version: 0,
        },
        change_id: format!("sample-change-{i}"),
        entered: None,
        conversions,
        routed: vec![],
        rollup: adtrail_domain::metrics::Counters::of_lead(Stage::Won, Some(value)),
        now,
    }
}

/// Event `i` of `site` posted to its pixel, one row: a purchase at `now`,
/// as the API writes a posted event.
pub fn posted_row(site: &str, currency: &str, i: usize, now: i64) -> EventRow {
    let event_id = format!("{site}-posted-{i}");
    EventRow {
        slug: PIXEL_SLUG.to_owned(),
        destination: None,
        platform: Platform::Meta,
        sk: row_ref(now, PIXEL_SLUG, &event_id),
        event_id,
        event_name: EventName::Purchase,
        event_time: now,
        value_cents: Some(10_000 + i as i64),
        currency: Some(currency.to_owned()),
        order_id: Some(format!("order-{i}")),
        action_source: ActionSource::Website,
        // Meta refuses a website event without the page it happened on.
        source_url: Some(format!("https://{site}.example/checkout")),
        hashes: contact(i),
        lead: None,
    }
}

/// The send queue's messages for a written lead.
pub fn messages(w: &LeadWrite) -> Vec<SendMessage> {
    w.conversions
        .iter()
        .map(|c| SendMessage {
            site_id: w.lead.site_id.clone(),
            key: c.sk.clone(),
        })
        .collect()
}
