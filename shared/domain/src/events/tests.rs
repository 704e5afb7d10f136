//! An event as each platform gets it: its own hashes and click ids,
//! malformed fields dropped by name, the vocabularies round-tripped.

use super::*;
use crate::contact::sha256_hex;

fn contact() -> Contact {
    Contact {
        email: Some(" John.Smith+shop@Gmail.com ".into()),
        phone: Some("(11) 98765-4321".into()),
        country: None,
        first_name: Some("Valéry".into()),
        last_name: Some("Smith Jr.".into()),
        external_id: Some("Client-42".into()),
        signals: [
            (Signal::Ip, "203.0.113.9".to_owned()),
            (Signal::UserAgent, "Mozilla/5.0".to_owned()),
            (Signal::Fbc, "fb.1.1554763741205.AbCdEf".to_owned()),
            (Signal::Ttclid, "E.C.P.abc".to_owned()),
            (Signal::Gclid, "Cj0KCQ".to_owned()),
        ]
        .into(),
    }
}

#[test]
fn each_platform_gets_its_own_hashes_and_only_its_own_click_ids() {
    let c = contact();
    let meta = match_data(Platform::Meta, &c, Some("BR"));
    let google = match_data(Platform::Google, &c, Some("BR"));
    let tiktok = match_data(Platform::TikTok, &c, Some("BR"));
    assert_eq!(meta.ph, [sha256_hex("5511987654321")]);
    assert_eq!(google.ph, [sha256_hex("+5511987654321")]);
    assert_eq!(tiktok.ph, [sha256_hex("+5511987654321")]);
    assert_eq!(meta.em, [sha256_hex("john.smith+shop@gmail.com")]);
    assert_eq!(google.em, [sha256_hex("johnsmith@gmail.com")]);
    assert_eq!(meta.first_name, Some(sha256_hex("valéry")));
    assert_eq!(google.first_name, None);
    assert_eq!(tiktok.last_name, Some(sha256_hex("smithjr")));
    assert_eq!(tiktok.external_id, Some(sha256_hex("client-42")));
    assert_eq!(meta.external_id, Some(sha256_hex("Client-42")));
    let keys = |h: &ContactHashes| h.signals.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&meta), ["fbc", "ip", "userAgent"]);
    assert_eq!(keys(&google), ["gclid"]);
    assert_eq!(keys(&tiktok), ["ip", "ttclid", "userAgent"]);
}

#[test]
fn a_prehashed_value_goes_only_where_metas_rule_is_the_platforms() {
    let h = sha256_hex("5511987654321");
    let c = Contact {
        phone: Some(h.clone()),
        email: Some(sha256_hex("a@b.co")),
        ..Contact::default()
    };
    assert_eq!(match_data(Platform::Meta, &c, None).ph, vec![h.clone()]);
    assert_eq!(match_data(Platform::Snap, &c, None).ph, vec![h.clone()]);
    assert!(match_data(Platform::TikTok, &c, None).ph.is_empty());
    assert!(match_data(Platform::Google, &c, None).ph.is_empty());
    assert!(match_data(Platform::Google, &c, None).em.is_empty());
    assert_eq!(match_data(Platform::TikTok, &c, None).em.len(), 1);
}

#[test]
fn malformed_fields_are_dropped_by_name_never_by_value() {
    let c = Contact {
        email: Some("not-an-email".into()),
        phone: Some("call me".into()),
        first_name: Some("Ana\u{200B}".into()),
        signals: [
            (Signal::Ip, "999.1.1.1".to_owned()),
            (Signal::Ttclid, "has space".to_owned()),
            (Signal::Fbp, "fb.1.2.3".to_owned()),
        ]
        .into(),
        ..Contact::default()
    };
    let (kept, dropped) = c.checked();
    let names: Vec<String> = dropped.iter().map(Dropped::warning).collect();
    assert_eq!(
        names,
        [
            "contact.email: dropped: malformed",
            "contact.phone: dropped: malformed",
            "contact.firstName: dropped: malformed",
            "contact.ip: dropped: malformed",
            "contact.ttclid: dropped: malformed",
        ]
    );
    assert!(kept.has_identity(), "fbp is left to match on");
    assert_eq!(format!("{kept:?}"), "Contact(fbp)");
    let only_ip = Contact {
        signals: [(Signal::Ip, "203.0.113.9".to_owned())].into(),
        ..Contact::default()
    };
    assert!(!only_ip.has_identity());
}

#[test]
fn the_vocabularies_round_trip() {
    for a in ActionSource::ALL {
        assert_eq!(ActionSource::parse(a.as_str()), Some(a));
    }
    for s in Signal::ALL {
        assert_eq!(Signal::parse(s.as_str()), Some(s));
    }
    assert!(ActionSource::Website.needs_source_url());
}
