//! A lead's events reaching the site's destinations: each platform's own
//! hashes of the change's contact, once per lead, destination and event.

use super::tests::{H, NOW, board, known, recorded, update};
use super::*;
use crate::board::Board;
use crate::capi::event_id;
use crate::contact::sha256_hex;
use crate::destinations::{Account, Destination};
use crate::events::Contact;
use crate::identifiers::{Platform, phone};
use crate::pixels::PixelReady;

fn destination(slug: &str, account: Account) -> Destination {
    Destination {
        site_id: "loja-x".into(),
        slug: slug.into(),
        account,
        enabled: true,
        set_by: None,
        sealed_credentials: vec![1],
        credential_version: "v1".into(),
        stopped: false,
        last_error: None,
        created_at: 1,
        updated_at: 1,
        archived_at: None,
    }
}

fn destinations() -> Vec<Destination> {
    vec![
        destination(
            "tiktok",
            Account::TikTok {
                pixel_code: "C123".into(),
                test_event_code: None,
            },
        ),
        destination(
            "ads",
            Account::Google {
                operating_account: "1234567890".into(),
                login_account: "1234567890".into(),
                conversion_actions: [(EventName::Purchase, "987".into())].into(),
                validate_only: false,
            },
        ),
        destination(
            "pins",
            Account::Pinterest {
                ad_account_id: "549755885175".into(),
                test: false,
            },
        ),
    ]
}

/// Loja X's context with `destinations`, and its pixel when `pixel`.
pub(super) fn context<'a>(
    board: &'a Board,
    destinations: &'a [Destination],
    pixel: bool,
) -> LeadContext<'a> {
    LeadContext {
        site_id: "loja-x",
        currency: "BRL",
        board,
        country: Some("BR"),
        targets: LeadTargets {
            pixel: pixel.then_some(PixelReady {
                send_lead_event: true,
            }),
            send_lead_event: true,
            destinations,
        },
        now: NOW,
    }
}

fn with_contact(mut u: LeadUpdate, phone: &str) -> LeadUpdate {
    u.contact = Some(Contact {
        phone: Some(phone.into()),
        email: Some("Ana@Example.com".into()),
        ..Contact::default()
    });
    u
}

fn slugs(w: &LeadWrite) -> Vec<(&str, EventName)> {
    w.routed
        .iter()
        .map(|r| (r.slug.as_str(), r.event_name))
        .collect()
}

#[test]
fn a_sale_reaches_every_destination_that_sends_it_with_its_own_hashes() {
    let b = board();
    let lead = recorded(&b);
    let dests = destinations();
    let ctx = context(&b, &dests, false);
    let sale = with_contact(
        update(NOW, Some(Stage::Won), Some(45_990), Some("agendado"), false),
        "(11) 98765-4321",
    );
    let w = decide(&ctx, known(&lead), &sale).expect("a sale is written");
    // No pixel: nothing for it. Google has a conversion action only for
    // Purchase; TikTok and Pinterest take Schedule too.
    assert!(w.conversions.is_empty());
    assert_eq!(
        slugs(&w),
        vec![
            ("tiktok", EventName::Schedule),
            ("pins", EventName::Schedule),
            ("tiktok", EventName::Purchase),
            ("ads", EventName::Purchase),
            ("pins", EventName::Purchase),
        ]
    );
    let of = |slug: &str| {
        w.routed
            .iter()
            .find(|r| r.slug == slug && r.event_name == EventName::Purchase)
            .unwrap()
    };
    let tiktok = phone(Platform::TikTok, "(11) 98765-4321", Some("BR")).unwrap();
    let pinterest = phone(Platform::Pinterest, "(11) 98765-4321", Some("BR")).unwrap();
    assert_ne!(tiktok, pinterest, "E.164 with + against digits");
    assert_eq!(of("tiktok").hashes.ph, vec![sha256_hex(&tiktok)]);
    assert_eq!(of("pins").hashes.ph, vec![sha256_hex(&pinterest)]);
    let row = of("ads");
    assert_eq!(row.event_id, event_id(&lead.lead_id, EventName::Purchase));
    assert_eq!(
        (row.value_cents, row.currency.as_deref()),
        (Some(45_990), Some("BRL"))
    );
    assert_eq!(row.destination.as_deref(), Some("ads"));
    assert_eq!(
        row.lead
            .as_ref()
            .map(|l| (l.lead_id.as_str(), l.lead_key.as_str())),
        Some((lead.lead_id.as_str(), "k1"))
    );
    // The lead records every row, so each goes once.
    assert_eq!(w.lead.routed["ads"][&EventName::Purchase], row.sk);
    let again = decide(
        &ctx,
        known(&Lead {
            version: 2,
            ..w.lead.clone()
        }),
        &with_contact(
            update(NOW + 1, None, None, Some("fechado"), false),
            "(11) 98765-4321",
        ),
    );
    assert!(
        again.is_none_or(|w| w.routed.is_empty()),
        "nothing queued twice"
    );
}

#[test]
fn meta_hashes_reach_only_the_platforms_whose_rule_is_metas() {
    let b = board();
    let lead = recorded(&b);
    let dests = destinations();
    let ctx = context(&b, &dests, true);
    // `meta: {ph}` only: the pixel and Pinterest take Meta's phone hash;
    // TikTok and Google want `+`, so they get no phone and, with nothing
    // else to match on, no row.
    let w = decide(
        &ctx,
        known(&lead),
        &update(NOW, Some(Stage::Won), Some(100), None, true),
    )
    .unwrap();
    assert_eq!(w.conversions.len(), 1);
    assert_eq!(w.conversions[0].hashes.ph, vec![H.to_owned()]);
    let pins = w.routed.iter().find(|r| r.slug == "pins").unwrap();
    assert_eq!(pins.hashes.ph, vec![H.to_owned()]);
    assert_eq!(slugs(&w), vec![("pins", EventName::Purchase)]);
    // The pixel gets Meta's hashes of the plain contact beside `meta`'s.
    let both = decide(
        &ctx,
        known(&lead),
        &with_contact(
            update(NOW, Some(Stage::Won), Some(100), None, true),
            "+55 11 98765-4321",
        ),
    )
    .unwrap();
    let meta = phone(Platform::Meta, "+55 11 98765-4321", None).unwrap();
    let mut ph = both.conversions[0].hashes.ph.clone();
    ph.sort();
    let mut want = vec![sha256_hex(&meta), H.to_owned()];
    want.sort();
    assert_eq!(ph, want);
    assert_eq!(both.conversions[0].hashes.em.len(), 1);
}

#[test]
fn without_contact_data_nothing_goes_anywhere() {
    let b = board();
    let lead = recorded(&b);
    let dests = destinations();
    let ctx = context(&b, &dests, true);
    let w = decide(
        &ctx,
        known(&lead),
        &update(NOW, Some(Stage::Won), Some(100), None, false),
    )
    .unwrap();
    assert!(w.conversions.is_empty() && w.routed.is_empty());
}
