//! Round trips through the items, and what a malformed one says.

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::leads::{Lead, NewConversion, Stage};
use adtrail_domain::pixels::{PixelSource, SitePixel};

use super::*;
use crate::error::StoreError;

fn lead() -> Lead {
    Lead {
        site_id: "loja-x".into(),
        lead_key: "k1".into(),
        lead_id: "l1".into(),
        origin: "ctwa_ad".into(),
        ad_id: Some("123".into()),
        form_id: None,
        label: None,
        column: Some("novo".into()),
        stage: Stage::Won,
        revenue_cents: Some(45_990),
        created_at: 5,
        cohort_day: 0,
        last_move_at: 7,
        conversions: [(EventName::Purchase, "0000000000009#abc".to_owned())].into(),
        routed: [(
            "tiktok".to_owned(),
            [(EventName::Lead, "0000000000009#def".to_owned())].into(),
        )]
        .into(),
        entries: vec![("novo".into(), 0)],
        version: 2,
    }
}

#[test]
fn a_lead_round_trips_through_its_item_one_version_on() {
    let item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
    assert!(item["conversions"].as_s().is_ok(), "a JSON text attribute");
    assert!(!item.contains_key("label"), "absent, not null");
    let back: Lead = decode::<LeadItem>(&item, "lead")
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(
        back,
        Lead {
            version: 3,
            ..lead()
        }
    );
}

#[test]
fn a_missing_attribute_is_an_error_that_names_it_and_no_value() {
    let mut item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
    item.remove("lastMoveAt");
    match decode::<LeadItem>(&item, "lead") {
        Err(StoreError::Malformed(why)) => assert_eq!(why, "lead: missing `lastMoveAt`"),
        other => panic!("{:?}", other.err()),
    }
    let mut item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
    item.insert(
        "createdAt".into(),
        aws_sdk_dynamodb::types::AttributeValue::S("secret-ish".into()),
    );
    match decode::<LeadItem>(&item, "lead") {
        Err(StoreError::Malformed(why)) => assert!(!why.contains("secret-ish"), "{why}"),
        other => panic!("{:?}", other.err()),
    }
}

/// A pending conversion to Meta with one phone hash.
fn pending_conversion() -> Conversion {
    Conversion {
        site_id: "loja-x".into(),
        sk: "0000000000009#e".into(),
        event_id: "e".into(),
        event_name: EventName::Lead,
        lead_id: "l".into(),
        lead_key: "k".into(),
        event_time: 1,
        created_at: 9,
        status: ConversionStatus::Pending,
        attempts: 0,
        next_attempt_at: Some(9),
        lease_until: None,
        value_cents: None,
        currency: None,
        sent_at: None,
        last_error: None,
        hashes: Some(ContactHashes {
            ph: vec!["a".repeat(64)],
            external_id: None,
            ..ContactHashes::default()
        }),
        work_at: Some(9),
        in_send_batch: false,
        unsure: false,
        uncounted: false,
        destination: None,
        action_source: None,
        source_url: None,
        order_id: None,
        platform: adtrail_domain::identifiers::Platform::Meta,
    }
}

#[test]
fn hashes_are_a_string_set_and_unsure_is_written_once_true() {
    let conv = pending_conversion();
    let new = NewConversion {
        event_id: "e".into(),
        event_name: EventName::Lead,
        event_time: 1,
        value_cents: None,
        currency: None,
        hashes: conv.hashes.clone().unwrap(),
        reopens: None,
        sk: conv.sk.clone(),
    };
    let owner = Lead {
        lead_id: "l".into(),
        lead_key: "k".into(),
        ..lead()
    };
    let keys = ("conv#loja-x".to_owned(), 9, Some("send#1".to_owned()));
    let item = encode(&ConversionItem::pending(&new, &owner, keys, 9), "c").unwrap();
    assert!(item["ph"].as_ss().is_ok());
    let back: Conversion = decode::<ConversionItem>(&item, "c")
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(back, conv);
    assert!(!item.contains_key("unsure"), "written only once true");
    let mut marked = item.clone();
    marked.insert(
        "unsure".into(),
        aws_sdk_dynamodb::types::AttributeValue::Bool(true),
    );
    let back: Conversion = decode::<ConversionItem>(&marked, "c")
        .unwrap()
        .try_into()
        .unwrap();
    assert!(back.unsure);
}

#[test]
fn a_pixel_token_is_binary() {
    let pixel = SitePixel {
        site_id: "loja-x".into(),
        pixel_id: "1".into(),
        name: "p".into(),
        source: PixelSource::Token {
            sealed_token: vec![1, 2, 3],
            token_version: "v".into(),
            set_by: None,
        },
        enabled: true,
        send_lead_event: false,
        test_event_code: None,
        last_error: None,
        stopped: false,
        not_granted: false,
        updated_at: 4,
    };
    let item = encode(
        &PixelItem::of(&pixel, "site#loja-x".into(), "pixel".into(), None),
        "pixel",
    )
    .unwrap();
    assert!(item["sealedToken"].as_b().is_ok());
    let back: SitePixel = decode::<PixelItem>(&item, "pixel")
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(back, pixel);
}
