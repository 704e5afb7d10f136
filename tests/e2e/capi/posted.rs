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

/// Puts the marker a first try put for `id`'s pixel row, naming the row it
/// meant to write at `at`, as a writer that stopped before its rows leaves
/// it.
async fn a_marker_without_its_row(h: &Harness, id: &str, at: i64) -> String {
    use aws_sdk_dynamodb::types::AttributeValue::S;
    let store = h.store();
    let sk = adtrail_domain::events::row_ref(at, "meta", id);
    store
        .ddb
        .put_item()
        .table_name(&store.names.table)
        .item("pk", S("posted#loja-x".into()))
        .item("sk", S(format!("meta#{id}")))
        .item("ref", S(sk.clone()))
        .send()
        .await
        .expect("put the marker");
    sk
}

/// Posts `ids` as purchases at `now`; answers the API's answer.
async fn post_ids(h: &Harness, ids: &[&str], now: i64) -> Value {
    post_events(h, ids.iter().map(|id| purchase(id, now)).collect()).await
}

/// The markers go before the rows, each on its own: a writer that stopped
/// between them failed its request, and the client's retry finds markers
/// naming rows that do not exist. It writes each such row at the key its
/// marker names, and the event goes to Meta once; the next try queues
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_stopped_after_its_markers_loses_nothing() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let first_try = now - 5_000;
    let mut meant = vec![];
    for id in ["r-1", "r-2", "r-3", "r-4"] {
        meant.push(a_marker_without_its_row(&h, id, first_try).await);
    }
    let ids = ["r-1", "r-2", "r-3", "r-4", "r-5"];
    let b = post_ids(&h, &ids, now).await;
    assert_eq!(b["queued"], 5, "{b}");
    assert!(
        b["events"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["duplicate"] == json!([]))
    );
    let written: Vec<String> = rows(&h, "loja-x").await.into_iter().map(|r| r.sk).collect();
    assert_eq!(written.len(), 5, "{written:#?}");
    for sk in &meant {
        assert!(written.contains(sk), "{sk} not in {written:#?}");
    }
    drain(&h).await;
    assert_eq!(meta_ids(&h), ids);
    let b = post_ids(&h, &ids, now).await;
    assert_eq!(b["queued"], 0, "{b}");
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 5);
}

/// Two requests with the same events at once (a client's retry racing its
/// first try): each event is queued by one of them and sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_racing_queue_each_event_once() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let mut ids: Vec<String> = (0..40).map(|i| format!("race-{i:02}")).collect();
    ids.sort();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut queued = 0;
    for _ in 0..3 {
        let (a, b) = tokio::join!(post_ids(&h, &ids, now), post_ids(&h, &ids, now));
        queued += a["queued"].as_i64().unwrap() + b["queued"].as_i64().unwrap();
    }
    assert_eq!(queued, 40, "each event queued by one request");
    assert_eq!(rows(&h, "loja-x").await.len(), 40);
    drain(&h).await;
    let mut sent = meta_ids(&h);
    sent.dedup();
    assert_eq!(sent, ids, "each event once");
    assert_eq!(meta_ids(&h).len(), 40, "none twice");
}
