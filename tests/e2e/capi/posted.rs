//! Events a storefront posts: checked, fanned out once per (destination,
//! eventId) with each platform's own hashes, sent through the queue, and a
//! replay that queues nothing new.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_meta::{LOJA_PIXEL, PET_PIXEL};
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

use super::drain;

/// Loja X with its pixel and a second Meta destination (Pet Mania's
/// pixel, reached with the agency's token as its own).
async fn two_meta_destinations(h: &Harness) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/meta-pets",
        Some(json!({
        "platform": "meta", "pixelId": PET_PIXEL.0, "credentials": {"accessToken": TOKEN}})),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_event_reaches_every_destination_once_with_its_platforms_hashes() {
    let started = Harness::start().await;
    let h = &started;
    two_meta_destinations(h).await;
    let now = h.now();
    let batch = json!({"events": [purchase("o-1", now), purchase("o-2", now)]});
    let b = h
        .expect(202, "POST", "/v1/sites/loja-x/events", Some(batch.clone()))
        .await;
    assert_eq!(b["queued"], 4, "{b}");
    assert_eq!(b["events"][0]["queued"], json!(["meta", "meta-pets"]));
    assert_eq!(b["events"][0]["duplicate"], json!([]));
    each_pixel_got_metas_hashes_and_plain_ids(h, now).await;
    replays_queue_nothing_but_for_a_new_destination(h, batch, now).await;
}

/// Each pixel got the events with Meta's hashes, the plain IP, user agent
/// and click id, and nothing of TikTok's.
async fn each_pixel_got_metas_hashes_and_plain_ids(h: &Harness, now: i64) {
    drain(h).await;
    let accepted = h.fake().accepted_events();
    assert_eq!(accepted.len(), 4);
    for pixel in [LOJA_PIXEL.0, PET_PIXEL.0] {
        let e = accepted
            .iter()
            .find(|e| e.pixel_id == pixel && e.event_id == "o-1")
            .expect("sent");
        assert_eq!(e.event_name, "Purchase");
        assert_eq!(e.action_source, "website");
        assert_eq!(e.event_time, now / 1000);
        let u = &e.user_data;
        assert_eq!(u["em"], json!([sha256_hex("ana.silva@example.com")]));
        assert_eq!(
            u["ph"],
            json!([sha256_hex("5511987654321")]),
            "digits, country code, no +"
        );
        assert_eq!(u["fn"], json!(sha256_hex("ana")));
        assert_eq!(u["client_ip_address"], "203.0.113.9", "plain");
        assert_eq!(u["client_user_agent"], "Mozilla/5.0");
        assert_eq!(u["fbc"], "fb.1.1554763741205.AbCdEf");
        assert!(
            u.get("ttclid").is_none(),
            "TikTok's click id stays off Meta"
        );
        assert_eq!(e.custom_data.as_ref().unwrap()["order_id"], "order-o-1");
        assert_eq!(e.custom_data.as_ref().unwrap()["value"], 459.9);
    }
}

/// The rows are sent and hold nothing of the contact any more; the same
/// batch again queues nothing, said per event and destination; a
/// destination added later gets the replayed event, the others do not; the
/// history names each row's destination.
async fn replays_queue_nothing_but_for_a_new_destination(h: &Harness, batch: Value, now: i64) {
    let all = rows(h, "loja-x").await;
    assert_eq!(all.len(), 4);
    assert!(
        all.iter()
            .all(|r| r.status == ConversionStatus::Sent && r.hashes.is_none())
    );
    // The same batch again: nothing new, said per event and destination.
    let b = h
        .expect(202, "POST", "/v1/sites/loja-x/events", Some(batch))
        .await;
    assert_eq!(b["queued"], 0);
    assert_eq!(b["events"][1]["duplicate"], json!(["meta", "meta-pets"]));
    drain(h).await;
    assert_eq!(h.fake().accepted_events().len(), 4);
    // A destination added later gets the replayed event; the others do not.
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/meta-three",
        Some(json!({
        "platform": "meta", "pixelId": LOJA_PIXEL.0, "credentials": {"accessToken": TOKEN}})),
    )
    .await;
    let b = h
        .expect(
            202,
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": [purchase("o-1", now)]})),
        )
        .await;
    assert_eq!(b["events"][0]["queued"], json!(["meta-three"]), "{b}");
    // The history names each row's destination.
    let list = h
        .expect(200, "GET", "/v1/sites/loja-x/conversions", None)
        .await;
    let mut seen: Vec<&str> = list["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["destination"].as_str().unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["meta", "meta-pets", "meta-three"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contact_fields_that_cannot_be_read_are_dropped_by_name() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let mut e = purchase("o-9", now);
    e["contact"] =
        json!({"email": "not-an-email", "phone": "call me maybe", "externalId": "client-9"});
    let mut lonely = purchase("o-10", now);
    lonely["contact"] = json!({"ip": "203.0.113.9"});
    let b = h
        .expect(
            202,
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": [e, lonely]})),
        )
        .await;
    assert_eq!(
        b["events"][0]["warnings"],
        json!([
            "events[0].contact.email: dropped: malformed",
            "events[0].contact.phone: dropped: malformed",
        ])
    );
    assert_eq!(b["events"][0]["queued"], json!(["meta"]));
    assert_eq!(b["events"][1]["queued"], json!([]));
    assert!(
        b["events"][1]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("nothing left to match")
    );
    assert!(!b.to_string().contains("call me maybe") && !b.to_string().contains("not-an-email"));
    drain(&h).await;
    let sent = h.fake().accepted_events();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].user_data["external_id"],
        json!([sha256_hex("client-9")])
    );
}

#[tokio::test]
async fn bad_batches_name_the_event_and_field_and_queue_nothing() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let with = |change: Value| {
        let mut e = purchase("o-1", now);
        if let (Some(o), Value::Object(more)) = (e.as_object_mut(), change) {
            o.extend(more);
        }
        json!({"events": [purchase("o-0", now), e]})
    };
    let cases = [
        (json!({"events": []}), "events:"),
        (with(json!({"eventId": "has space"})), "events[1].eventId"),
        (
            with(json!({"eventId": "o-0"})),
            "events[1].eventId: repeats",
        ),
        (with(json!({"event": "refund"})), "events[1].event:"),
        (
            with(json!({"occurredAt": now + 3_600_000})),
            "events[1].occurredAt:",
        ),
        (
            with(json!({"actionSource": "fax"})),
            "events[1].actionSource:",
        ),
        (
            with(json!({"eventSourceUrl": null})),
            "events[1].eventSourceUrl:",
        ),
        (
            with(json!({"eventSourceUrl": "ftp://x"})),
            "events[1].eventSourceUrl:",
        ),
        (
            with(json!({"valueCents": null, "currency": null})),
            "events[1].valueCents:",
        ),
        (with(json!({"currency": "XXQ"})), "events[1].currency:"),
        (with(json!({"currency": null})), "events[1].currency:"),
        (
            with(json!({"contact": {"mail": "a@b.co"}})),
            "events[1].contact",
        ),
    ];
    for (body, field) in cases {
        let (s, b) = h
            .call("POST", "/v1/sites/loja-x/events", Some(body.clone()))
            .await;
        assert_eq!(s, 400, "{body}: {b}");
        assert!(
            b["error"]["message"].as_str().unwrap().starts_with(field),
            "{field}: {b}"
        );
    }
    let too_many: Vec<Value> = (0..101).map(|i| purchase(&format!("o-{i}"), now)).collect();
    let (s, _) = h
        .call(
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": too_many})),
        )
        .await;
    assert_eq!(s, 400);
    let (s, _) = h
        .call(
            "POST",
            "/v1/sites/nowhere/events",
            Some(json!({"events": [purchase("o-1", now)]})),
        )
        .await;
    assert_eq!(s, 404);
    assert!(rows(&h, "loja-x").await.is_empty());
}
