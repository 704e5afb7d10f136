//! Which events a lead change queues, once per lead, with Meta's exact
//! payload.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::capi::{EventName, event_id};
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_meta::LOJA_PIXEL;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::{drain, lead_id};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_seed_table() {
    let started = Harness::start().await;
    let h = &started;
    loja_with_pixel(h).await;
    let ana = the_seed_rows_without_lead_events(h).await;
    let caio = a_new_lead_sends_lead_when_asked(h).await;
    drain(h).await;
    metas_payload_one_request(h, &ana, &caio);
    sent_rows_the_list_and_the_counters_agree(h).await;
    a_removed_lead_takes_its_conversions(h).await;
    pixel_off_or_removed_queues_nothing(h).await;
}

/// The seed's rows without `sendLeadEvent`: a new lead, `qualified`
/// alone, an unmapped or undeclared column, a won without a value or a
/// change without `meta` send nothing; a mapped column and a sale do.
/// Answers Ana's lead id.
async fn the_seed_rows_without_lead_events(h: &Harness) -> String {
    // A new lead without sendLeadEvent: nothing.
    let (s, b) = record(h, "ana", "c1", json!({"meta": meta_for("ana")})).await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["queued"], json!([]));
    assert_eq!(b["channel"], json!("chat"), "a lead the host records");
    let ana = lead_id(&b);
    // `qualified` alone sends nothing.
    let (_, b) = move_to(
        h,
        "ana",
        "c2",
        json!({"stage": "qualified", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    // A mapped column sends its event.
    let (_, b) = move_to(
        h,
        "ana",
        "c3",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]), "{b}");
    // An unmapped column sends nothing; an undeclared one is ignored.
    let (_, b) = move_to(
        h,
        "ana",
        "c4",
        json!({"column": "fechado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    assert_eq!(b["column"], "fechado");
    let (s, b) = move_to(
        h,
        "ana",
        "c5",
        json!({"column": "nope", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!((s, b["column"].clone()), (200, json!("fechado")), "{b}");
    // A sale with a value: Purchase with the site's currency.
    let (_, b) = move_to(
        h,
        "ana",
        "c6",
        json!({"stage": "won", "revenueCents": 45_990, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Purchase"]), "{b}");
    // A won without a value, and a change without meta: nothing.
    let (_, b) = record(h, "bia", "c7", json!({})).await;
    assert_eq!(b["queued"], json!([]));
    let (_, b) = move_to(h, "bia", "c8", json!({"column": "agendado"})).await;
    assert_eq!(b["queued"], json!([]), "no meta, nothing queued");
    let (_, b) = move_to(
        h,
        "bia",
        "c9",
        json!({"stage": "won", "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "won without a value");

    ana
}

/// `sendLeadEvent` on: a new lead sends `Lead` (and its column's event).
/// Answers Caio's lead id.
async fn a_new_lead_sends_lead_when_asked(h: &Harness) -> String {
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/event-map", Some(json!({"columns": {"agendado": "Schedule", "qualificado": "QualifiedLead"}, "sendLeadEvent": true})))
        .await;
    assert_eq!(s, 200);
    let (_, b) = record(
        h,
        "caio",
        "c10",
        json!({"column": "qualificado", "meta": meta_for("caio")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Lead", "QualifiedLead"]), "{b}");

    lead_id(&b)
}

/// Meta got the four events with its exact payload, in one request.
fn metas_payload_one_request(h: &Harness, ana: &str, caio: &str) {
    let accepted = h.fake().accepted_events();
    let mut got: Vec<(String, String)> = accepted
        .iter()
        .map(|e| (e.event_id.clone(), e.event_name.clone()))
        .collect();
    got.sort();
    let mut want = vec![
        (event_id(ana, EventName::Schedule), "Schedule".to_owned()),
        (event_id(ana, EventName::Purchase), "Purchase".to_owned()),
        (event_id(caio, EventName::Lead), "Lead".to_owned()),
        (
            event_id(caio, EventName::QualifiedLead),
            "QualifiedLead".to_owned(),
        ),
    ];
    want.sort();
    assert_eq!(got, want);
    let purchase = accepted
        .iter()
        .find(|e| e.event_name == "Purchase")
        .unwrap();
    assert_eq!(purchase.pixel_id, LOJA_PIXEL.0);
    assert_eq!(purchase.action_source, "chat");
    assert_eq!(purchase.event_time, h.now() / 1000);
    assert_eq!(
        purchase.custom_data,
        Some(json!({"value": 459.9, "currency": "BRL"}))
    );
    assert_eq!(
        purchase.user_data,
        json!({"ph": [sha256_hex("5511900000ana")], "external_id": [sha256_hex("ana")], "country": [sha256_hex("br")]})
    );
    assert!(accepted.iter().all(|e| e.test_event_code.is_none()));
    // One request carried all four.
    let posts = h
        .fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events"))
        .count();
    assert_eq!(posts, 1);
}

/// Sent rows keep no hashes; the list and the counters agree.
async fn sent_rows_the_list_and_the_counters_agree(h: &Harness) {
    for row in rows(h, "loja-x").await {
        assert_eq!(row.status, ConversionStatus::Sent);
        assert!(row.hashes.is_none(), "hashes erased after delivery");
        assert_eq!(row.attempts, 1);
    }
    let (s, list) = h.call("GET", "/v1/sites/loja-x/conversions", None).await;
    assert_eq!(s, 200, "{list}");
    let items = list["conversions"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    let sale = items.iter().find(|i| i["eventName"] == "Purchase").unwrap();
    assert_eq!(sale["valueCents"], 45_990);
    assert_eq!(sale["leadLabel"], "Cliente ana");
    assert_eq!(sale["adId"], "120000000000000001");
    assert_eq!(sale["status"], "sent");
    assert!(
        !list.to_string().contains(&sha256_hex("ana")),
        "the list never carries hashes"
    );
    let (_, status) = h
        .call(
            "GET",
            &format!("/v1/meta/status?siteIds=loja-x&now={}", h.now()),
            None,
        )
        .await;
    let c = &status["sites"][0]["conversions"];
    assert_eq!(
        (
            c["pending"].clone(),
            c["sent"].clone(),
            c["failed"].clone(),
            c["sentToday"].clone()
        ),
        (json!(0), json!(4), json!(0), json!(4)),
        "{status}"
    );
    assert_eq!(
        c["last30d"],
        json!({"Purchase": 1, "QualifiedLead": 1, "Lead": 1, "Schedule": 1,
               "CompleteRegistration": 0, "AddToCart": 0, "InitiateCheckout": 0,
               "ViewContent": 0, "Search": 0})
    );
}

/// A removed lead takes its conversions and leaves the counters.
async fn a_removed_lead_takes_its_conversions(h: &Harness) {
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/leads/ana", None).await;
    assert_eq!(s, 200);
    let (_, status) = h
        .call(
            "GET",
            &format!("/v1/meta/status?siteIds=loja-x&now={}", h.now()),
            None,
        )
        .await;
    let c = &status["sites"][0]["conversions"];
    assert_eq!(
        (c["sent"].clone(), c["sentToday"].clone()),
        (json!(2), json!(2)),
        "{status}"
    );
    assert_eq!(rows(h, "loja-x").await.len(), 2);
}

/// Pixel off or removed: nothing is queued, the call succeeds.
async fn pixel_off_or_removed_queues_nothing(h: &Harness) {
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, b) = record(h, "duda", "c11", json!({"meta": meta_for("duda")})).await;
    assert_eq!((s, b["queued"].clone()), (201, json!([])), "{b}");
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/pixel", None).await;
    assert_eq!(s, 200);
    let (_, b) = move_to(
        h,
        "duda",
        "c12",
        json!({"stage": "won", "revenueCents": 100, "meta": meta_for("duda")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
}

#[tokio::test]
async fn a_phone_hash_repeated_anywhere_in_meta_is_sent_once() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let (a, b) = (sha256_hex("5511900000001"), sha256_hex("5511900000002"));
    // DynamoDB refuses a string set with a value twice: before, this was a 500.
    let (s, body) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": {"ph": [a, b, a]}}),
    )
    .await;
    assert_eq!(
        (s, body["queued"].clone()),
        (201, json!(["Schedule"])),
        "{body}"
    );
    drain(&h).await;
    let sent = h.fake().accepted_events();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].user_data["ph"], json!([a, b]));
}
