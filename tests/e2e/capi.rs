//! The Conversions API end to end: the API writes leads and their outbox
//! rows, the runner drains the send queue into the `capi-sender`, and the
//! fake Meta records what it accepted. Time is the runner's virtual clock,
//! which also governs the delays the sender hands SQS.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::capi::{EventName, event_id};
use adtrail_domain::contact::sha256_hex;
use adtrail_domain::time::{DAY_MS, MINUTE_MS};
use adtrail_fake_meta::LOJA_PIXEL;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

async fn drain(h: &Harness) {
    h.runner().drain().await.expect("drain");
}

fn lead_id(body: &Value) -> String {
    body["leadId"].as_str().expect("leadId").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_seed_table() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;

    // A new lead without sendLeadEvent: nothing.
    let (s, b) = record(&h, "ana", "c1", json!({"meta": meta_for("ana")})).await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["queued"], json!([]));
    let ana = lead_id(&b);
    // `qualified` alone sends nothing.
    let (_, b) = move_to(
        &h,
        "ana",
        "c2",
        json!({"stage": "qualified", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    // A mapped column sends its event.
    let (_, b) = move_to(
        &h,
        "ana",
        "c3",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]), "{b}");
    // An unmapped column sends nothing; an undeclared one is ignored.
    let (_, b) = move_to(
        &h,
        "ana",
        "c4",
        json!({"column": "fechado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    assert_eq!(b["column"], "fechado");
    let (s, b) = move_to(
        &h,
        "ana",
        "c5",
        json!({"column": "nope", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!((s, b["column"].clone()), (200, json!("fechado")), "{b}");
    // A sale with a value: Purchase with the site's currency.
    let (_, b) = move_to(
        &h,
        "ana",
        "c6",
        json!({"stage": "won", "revenueCents": 45_990, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Purchase"]), "{b}");
    // A won without a value, and a change without meta: nothing.
    let (_, b) = record(&h, "bia", "c7", json!({})).await;
    assert_eq!(b["queued"], json!([]));
    let (_, b) = move_to(&h, "bia", "c8", json!({"column": "agendado"})).await;
    assert_eq!(b["queued"], json!([]), "no meta, nothing queued");
    let (_, b) = move_to(
        &h,
        "bia",
        "c9",
        json!({"stage": "won", "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "won without a value");

    // sendLeadEvent on: a new lead sends Lead.
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/event-map", Some(json!({"columns": {"agendado": "Schedule", "qualificado": "QualifiedLead"}, "sendLeadEvent": true})))
        .await;
    assert_eq!(s, 200);
    let (_, b) = record(
        &h,
        "caio",
        "c10",
        json!({"column": "qualificado", "meta": meta_for("caio")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Lead", "QualifiedLead"]), "{b}");
    let caio = lead_id(&b);

    drain(&h).await;
    let accepted = h.fake().accepted_events();
    let mut got: Vec<(String, String)> = accepted
        .iter()
        .map(|e| (e.event_id.clone(), e.event_name.clone()))
        .collect();
    got.sort();
    let mut want = vec![
        (event_id(&ana, EventName::Schedule), "Schedule".to_owned()),
        (event_id(&ana, EventName::Purchase), "Purchase".to_owned()),
        (event_id(&caio, EventName::Lead), "Lead".to_owned()),
        (
            event_id(&caio, EventName::QualifiedLead),
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

    // Sent rows keep no hashes; the list and the counters agree.
    for row in rows(&h, "loja-x").await {
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
        json!({"Purchase": 1, "QualifiedLead": 1, "Lead": 1, "Schedule": 1})
    );

    // A removed lead takes its conversions and leaves the counters.
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
    assert_eq!(rows(&h, "loja-x").await.len(), 2);

    // Pixel off or removed: nothing is queued, the call succeeds.
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, b) = record(&h, "duda", "c11", json!({"meta": meta_for("duda")})).await;
    assert_eq!((s, b["queued"].clone()), (201, json!([])), "{b}");
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/pixel", None).await;
    assert_eq!(s, 200);
    let (_, b) = move_to(
        &h,
        "duda",
        "c12",
        json!({"stage": "won", "revenueCents": 100, "meta": meta_for("duda")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_per_lead_per_event_and_idempotent_changes() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let (_, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]));
    // The same change again: nothing.
    let (s, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(
        (s, b["duplicate"].clone(), b["queued"].clone()),
        (200, json!(true), json!([])),
        "{b}"
    );
    h.runner().advance(MINUTE_MS).await.unwrap();
    // Out and back into the column: not queued again.
    move_to(
        &h,
        "ana",
        "c2",
        json!({"column": "fechado", "meta": meta_for("ana")}),
    )
    .await;
    h.runner().advance(MINUTE_MS).await.unwrap();
    let (_, b) = move_to(
        &h,
        "ana",
        "c3",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    // A move older than the last changes nothing.
    let old = h.now() - 30 * MINUTE_MS;
    let (_, b) = move_to(
        &h,
        "ana",
        "c4",
        json!({"column": "qualificado", "occurredAt": old, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(
        (b["changed"].clone(), b["column"].clone()),
        (json!(false), json!("agendado")),
        "{b}"
    );
    // A second sale of the same lead: one Purchase.
    move_to(
        &h,
        "ana",
        "c5",
        json!({"stage": "won", "revenueCents": 1_000, "meta": meta_for("ana")}),
    )
    .await;
    let (_, b) = move_to(
        &h,
        "ana",
        "c6",
        json!({"stage": "won", "revenueCents": 2_000, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]));
    drain(&h).await;
    let names: Vec<String> = h
        .fake()
        .accepted_events()
        .iter()
        .map(|e| e.event_name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // The event map counts distinct leads that entered a column in 30 days.
    record(&h, "bia", "c7", json!({"column": "agendado"})).await;
    let (s, map) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/event-map?now={}", h.now()),
            None,
        )
        .await;
    assert_eq!(s, 200, "{map}");
    let agendado = map["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "agendado")
        .unwrap();
    assert_eq!(
        agendado["monthCount"], 2,
        "ana came back but counts once: {map}"
    );
    assert_eq!(agendado["event"], "Schedule");
    assert_eq!(agendado["color"], "#f97316");
    assert_eq!(map["pixelEnabled"], true);
    let (_, map) = h.call("GET", "/v1/sites/loja-x/event-map", None).await;
    assert!(
        map["columns"][0]["monthCount"].is_null(),
        "null without now"
    );
    // A column that is gone leaves the map, one that stays keeps its event.
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pipeline",
            Some(json!({"columns": [{"key": "agendado", "name": "Agendado!"}]})),
        )
        .await;
    assert_eq!(s, 200);
    let (_, map) = h.call("GET", "/v1/sites/loja-x/event-map", None).await;
    assert_eq!(
        map["columns"],
        json!([{"key": "agendado", "name": "Agendado!", "group": null, "color": null, "event": "Schedule", "monthCount": null}])
    );
    let (s, e) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/event-map",
            Some(json!({"columns": {"qualificado": "Lead"}})),
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].clone()),
        (400, json!("INVALID_ARGUMENT")),
        "{e}"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("columns.qualificado")
    );
    let many: Vec<Value> = (0..41)
        .map(|i| json!({"key": format!("c{i}"), "name": "x"}))
        .collect();
    let (s, e) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pipeline",
            Some(json!({"columns": many})),
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].clone()),
        (409, json!("LIMIT_EXCEEDED"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_after_one_then_ten_minutes_then_fails_and_reopens() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    h.fake().tune(|k| k.fail_5xx = 3);
    let (_, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    let ana = lead_id(&b);
    let t = h.now();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.attempts, row.next_attempt_at),
        (1, Some(t + MINUTE_MS))
    );
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_UNAVAILABLE")
    );
    // Not before its time.
    h.runner().advance(MINUTE_MS - 1_000).await.unwrap();
    drain(&h).await;
    assert_eq!(rows(&h, "loja-x").await[0].attempts, 1);
    h.runner().advance(1_000).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.attempts, row.next_attempt_at),
        (2, Some(t + 11 * MINUTE_MS))
    );
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Failed, 3));
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_UNAVAILABLE")
    );
    assert!(row.hashes.is_none(), "hashes erased after failure");
    assert!(h.fake().accepted_events().is_empty());
    assert_eq!(h.runner().held_count(), 0, "the message is gone");

    // `meta` reaching the failed event again opens it: attempts back to zero.
    move_to(&h, "ana", "c2", json!({"column": "fechado"})).await;
    let (_, b) = move_to(
        &h,
        "ana",
        "c3",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]), "{b}");
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 1));
    assert_eq!(
        h.fake().accepted_events()[0].event_id,
        event_id(&ana, EventName::Schedule)
    );
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    let c = &status["sites"][0]["conversions"];
    assert_eq!(
        (c["pending"].clone(), c["sent"].clone(), c["failed"].clone()),
        (json!(0), json!(1), json!(0)),
        "{status}"
    );
    assert!(c["last30d"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_errors_and_old_events_fail_at_once() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    h.fake().tune(|k| k.deny_events = true);
    record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Failed, 1));
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_PERMISSION_MISSING"),
        "{row:?}"
    );
    h.fake().tune(|k| k.deny_events = false);

    // An event that happened more than 7 days before its turn: not sent.
    let old = h.now() - 7 * DAY_MS - MINUTE_MS;
    record(
        &h,
        "bia",
        "c2",
        json!({"occurredAt": old, "column": "agendado", "meta": meta_for("bia")}),
    )
    .await;
    let requests = h.fake().requests().len();
    drain(&h).await;
    let row = rows(&h, "loja-x").await.into_iter().find(|r| {
        r.status != ConversionStatus::Failed
            || r.last_error
                .as_deref()
                .is_some_and(|e| e.starts_with("EVENT_TOO_OLD"))
    });
    let row = row.expect("the old event");
    assert_eq!(row.status, ConversionStatus::Failed);
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("EVENT_TOO_OLD")
    );
    assert_eq!(h.fake().requests().len(), requests, "no request for it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invalid_event_in_500_is_isolated() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let mut bad = String::new();
    let started = std::time::Instant::now();
    for i in 0..500 {
        let key = format!("lead-{i}");
        let (s, b) = record(
            &h,
            &key,
            &format!("c{i}"),
            json!({"column": "agendado", "meta": meta_for(&key)}),
        )
        .await;
        assert_eq!(s, 201, "{b}");
        if i == 321 {
            bad = event_id(&lead_id(&b), EventName::Schedule);
        }
    }
    h.fake().tune(|k| k.reject_event_ids = vec![bad.clone()]);
    h.fake().clear_requests();
    let recorded = started.elapsed();
    drain(&h).await;
    eprintln!(
        "recorded in {recorded:?}, drained in {:?}",
        started.elapsed() - recorded
    );
    let accepted = h.fake().accepted_events();
    assert_eq!(accepted.len(), 499);
    assert!(accepted.iter().all(|e| e.event_id != bad));
    let posts = h
        .fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events"))
        .count();
    assert!(posts <= 2 * 9 + 1, "{posts} requests for 500 events");
    let all = rows(&h, "loja-x").await;
    let failed: Vec<_> = all
        .iter()
        .filter(|r| r.status == ConversionStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].event_id, bad);
    assert!(
        failed[0]
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("META_REJECTED")
    );
    assert_eq!(
        all.iter()
            .filter(|r| r.status == ConversionStatus::Sent)
            .count(),
        499
    );
    println!("one invalid event in 500: {posts} requests to Meta");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_its_owner_until_a_new_one() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    h.fake().kill_token(TOKEN);
    record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(row.status, ConversionStatus::Failed);
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_TOKEN_INVALID")
    );
    let conn = h
        .store()
        .connections()
        .get_connection("agency")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(conn.status.as_str(), "invalid");
    // The connection's pixel stops: nothing more is queued.
    let (_, b) = record(
        &h,
        "bia",
        "c2",
        json!({"column": "agendado", "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]));
    // A new token: sending again.
    h.connect("EAAB-sample-agency-token-0002").await;
    let (_, b) = record(
        &h,
        "caio",
        "c3",
        json!({"column": "agendado", "meta": meta_for("caio")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]));
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 1);
    // An old token refused after a new one was stored stops nothing.
    let version = h
        .store()
        .connections()
        .get_connection("agency")
        .await
        .unwrap()
        .unwrap()
        .token_version;
    assert!(
        !h.store()
            .connections()
            .stop_connection(
                "agency",
                "an-older-version",
                "META_TOKEN_INVALID: x",
                h.now()
            )
            .await
            .unwrap()
    );
    let conn = h
        .store()
        .connections()
        .get_connection("agency")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (conn.status.as_str(), conn.token_version),
        ("active", version)
    );

    // A pixel's own token refused: the pixel stops until a token is stored.
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": LOJA_PIXEL.0, "accessToken": "EAAB-pixel-token-1"})),
        )
        .await;
    assert_eq!(s, 200);
    h.fake().kill_token("EAAB-pixel-token-1");
    move_to(
        &h,
        "caio",
        "c4",
        json!({"stage": "won", "revenueCents": 500, "meta": meta_for("caio")}),
    )
    .await;
    drain(&h).await;
    let pixel = h
        .store()
        .pixels()
        .get_pixel("loja-x")
        .await
        .unwrap()
        .unwrap();
    assert!(pixel.stopped);
    assert!(
        pixel
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("META_TOKEN_INVALID")
    );
    let (_, b) = move_to(
        &h,
        "bia",
        "c5",
        json!({"stage": "won", "revenueCents": 500, "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "a stopped pixel queues nothing");
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": LOJA_PIXEL.0, "accessToken": "EAAB-pixel-token-2"})),
        )
        .await;
    assert_eq!(s, 200);
    let (_, b) = move_to(
        &h,
        "bia",
        "c6",
        json!({"stage": "won", "revenueCents": 600, "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Purchase"]));
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_deliveries_send_once_and_lost_sends_are_recovered() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let (_, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]));
    // SQS hands the message three times: in one batch and in a later one.
    let row = &rows(&h, "loja-x").await[0];
    let body = json!({"siteId": "loja-x", "key": row.sk}).to_string();
    let url = h.store().names.send_queue_url.clone();
    h.store()
        .queues()
        .send_batch(&url, &[body.clone(), body.clone()])
        .await
        .unwrap();
    drain(&h).await;
    h.store()
        .queues()
        .send_batch(&url, std::slice::from_ref(&body))
        .await
        .unwrap();
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 1);
    assert_eq!(rows(&h, "loja-x").await[0].attempts, 1);

    // A crash between the DynamoDB write and the queue: the message never
    // left. The sweeper sends it once its attempt is 15 minutes late,
    // counting the lost attempt.
    record(
        &h,
        "bia",
        "c2",
        json!({"column": "agendado", "meta": meta_for("bia")}),
    )
    .await;
    h.store()
        .sqs
        .purge_queue()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    h.runner().advance(15 * MINUTE_MS).await.unwrap();
    let report = h.runner().sweep().await.unwrap();
    assert_eq!(
        report.sends_requeued, 0,
        "not yet more than 15 minutes late"
    );
    h.runner().advance(1_000).await.unwrap();
    let report = h.runner().sweep().await.unwrap();
    assert_eq!(report.sends_requeued, 1);
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 2);
    let bia = rows(&h, "loja-x")
        .await
        .into_iter()
        .find(|r| r.lead_key == "bia")
        .unwrap();
    assert_eq!((bia.status, bia.attempts), (ConversionStatus::Sent, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_runs_name_the_ads_that_brought_leads() {
    let h = Harness::start().await;
    let accounts = adtrail_fake_meta::sample_accounts();
    let loja = accounts.iter().find(|a| a.id == LOJA_PRINCIPAL).unwrap();
    let pet = accounts.iter().find(|a| a.id == PET_EAST).unwrap();
    // An archived ad: not listed, no spend lately, answered only by id.
    let archived = loja.ads[0].clone();
    let elsewhere = pet.ads[0].clone();
    h.fake()
        .tune(|k| k.archived_ads = vec![archived.id.clone(), elsewhere.id.clone()]);
    h.link_agency().await;
    h.sync_until_live(10).await;
    assert!(
        h.store()
            .catalog()
            .catalog_entries("loja-x", std::slice::from_ref(&archived.id))
            .await
            .unwrap()
            .is_empty(),
        "not in the catalog yet"
    );
    for (key, ad) in [("ana", &archived.id), ("bia", &elsewhere.id)] {
        let (s, b) = h
            .call(
                "POST",
                "/v1/sites/loja-x/leads",
                Some(json!({"leadKey": key, "changeId": key, "occurredAt": h.now(), "origin": "ctwa_ad", "adId": ad})),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    let entries = h
        .store()
        .catalog()
        .catalog_entries("loja-x", &[archived.id.clone(), elsewhere.id.clone()])
        .await
        .unwrap();
    assert_eq!(
        entries.len(),
        1,
        "only Loja X's own ad is named there: {entries:?}"
    );
    assert_eq!(entries[0].ad_name.as_deref(), Some(archived.name.as_str()));
    assert_eq!(entries[0].ad_account_id.as_deref(), Some(LOJA_PRINCIPAL));
    assert_eq!(
        entries[0].campaign_name.as_deref(),
        Some(archived.campaign_name.as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_codes_pixels_gone_before_the_send_and_the_list_cursor() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    // A test event code: every event carries it; the status says testMode.
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/pixel", Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "testEventCode": "TEST12345"})))
        .await;
    assert_eq!(s, 200);
    for i in 0..3 {
        let key = format!("l{i}");
        record(
            &h,
            &key,
            &format!("c{i}"),
            json!({"column": "agendado", "meta": meta_for(&key)}),
        )
        .await;
    }
    drain(&h).await;
    let accepted = h.fake().accepted_events();
    assert_eq!(accepted.len(), 3);
    assert!(
        accepted
            .iter()
            .all(|e| e.test_event_code.as_deref() == Some("TEST12345"))
    );
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    assert_eq!(status["sites"][0]["pixel"]["testMode"], true);

    // The pixel turned off between the queue and the send.
    record(
        &h,
        "off",
        "c-off",
        json!({"column": "agendado", "meta": meta_for("off")}),
    )
    .await;
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    drain(&h).await;
    let off = rows(&h, "loja-x")
        .await
        .into_iter()
        .find(|r| r.lead_key == "off")
        .unwrap();
    assert_eq!(off.status, ConversionStatus::Failed);
    assert!(
        off.last_error
            .as_deref()
            .unwrap()
            .starts_with("PIXEL_UNAVAILABLE"),
        "{off:?}"
    );
    assert_eq!(h.fake().accepted_events().len(), 3);

    // The list pages newest first by (createdAt, eventId).
    let (_, page) = h
        .call("GET", "/v1/sites/loja-x/conversions?limit=2", None)
        .await;
    let first: Vec<Value> = page["conversions"].as_array().unwrap().clone();
    assert_eq!(first.len(), 2);
    let next = &page["next"];
    let (_, page) = h
        .call(
            "GET",
            &format!(
                "/v1/sites/loja-x/conversions?limit=2&before={}&beforeEventId={}",
                next["before"],
                next["beforeEventId"].as_str().unwrap()
            ),
            None,
        )
        .await;
    let second: Vec<Value> = page["conversions"].as_array().unwrap().clone();
    assert_eq!(second.len(), 2);
    assert!(page["next"].is_null() || second.len() == 2);
    let mut ids: Vec<&str> = first
        .iter()
        .chain(&second)
        .map(|c| c["eventId"].as_str().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "no row twice, none skipped");
    let (s, e) = h
        .call("GET", "/v1/sites/loja-x/conversions?limit=51", None)
        .await;
    assert_eq!(
        (s, e["error"]["code"].clone()),
        (400, json!("INVALID_ARGUMENT"))
    );
}
