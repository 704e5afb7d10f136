//! Delivery as SQS gives it (duplicates, lost messages, sends it refuses),
//! the ads live runs name, test codes and the history's cursor.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::time::MINUTE_MS;
use adtrail_fake_meta::LOJA_PIXEL;
use adtrail_tests::capi::*;
use adtrail_tests::queues::take_all;
use adtrail_tests::*;
use serde_json::{Value, json};

use super::drain;

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
    lose_queued_sends(&h).await;
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

    // SQS failing every entry of the send, each time the store sends it
    // again: the change is taken all the same (its row is pending), and
    // the sweeper sends it once it is late.
    let faults = &h.runner().stack.cloud.faults;
    let share = faults.batch_share();
    faults.set_batch_share(1.0);
    let (s, b) = record(
        &h,
        "caio",
        "c3",
        json!({"column": "agendado", "meta": meta_for("caio")}),
    )
    .await;
    faults.set_batch_share(share);
    assert_eq!((s, &b["queued"]), (201, &json!(["Schedule"])), "{b}");
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 2, "nothing was queued");
    h.runner().advance(15 * MINUTE_MS + 1_000).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 1);
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 3);
}

/// SQS failing every entry of a batch on its side, three requests
/// running (the SDK retries none of them: the request succeeded): the
/// store sends the entries again, and each message arrives once.
#[tokio::test]
async fn entries_sqs_fails_on_its_side_are_sent_again() {
    let h = Harness::start().await;
    let faults = &h.runner().stack.cloud.faults;
    faults.set_batch_share(0.0);
    faults.refuse_next_batches(3);
    let api = h.runner().stack.store_for("ApiFunction");
    let url = h.store().names.send_queue_url.clone();
    let bodies: Vec<String> = (0..10)
        .map(|i| json!({"siteId": "loja-x", "key": format!("k{i}")}).to_string())
        .collect();
    let refused = api.queues().send_batch(&url, &bodies).await.unwrap();
    assert_eq!(refused, 0);
    assert_eq!(faults.injected().get("batch entries failed"), Some(&3));
    let mut arrived = take_all(h.store(), &url).await;
    arrived.sort();
    let mut sent = bodies.clone();
    sent.sort();
    assert_eq!(arrived, sent, "each once");
}

/// A sender that claimed a row late and died: the claim leaves the row at
/// its due time in the index, so the sweeper finds it late while the lease
/// still runs, and must leave it; once the lease ends it goes again,
/// unsure (Meta may hold it), with the claimed attempt not counted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_sender_died_goes_again_once_its_lease_ends() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    schedule_ana(&h).await;
    lose_queued_sends(&h).await;
    let sk = rows(&h, "loja-x").await[0].sk.clone();
    // Claimed ten minutes late by a sender that never ends it.
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    claim_as_dead_sender(&h, &sk).await;
    // 16 minutes late, its lease still running: left alone.
    h.runner().advance(6 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    // The lease over: sent again, once.
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 1);
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.status, row.attempts, row.unsure),
        (ConversionStatus::Sent, 2, true)
    );
    assert_eq!(h.fake().accepted_events().len(), 1);
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
    let started = Harness::start().await;
    let h = &started;
    loja_with_pixel(h).await;
    a_test_event_code_rides_on_every_event(h).await;
    a_pixel_turned_off_before_the_send(h).await;
    the_list_pages_newest_first(h).await;
}

/// A test event code: every event carries it; the status says testMode.
async fn a_test_event_code_rides_on_every_event(h: &Harness) {
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/pixel", Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "testEventCode": "TEST12345"})))
        .await;
    assert_eq!(s, 200);
    for i in 0..3 {
        let key = format!("l{i}");
        record(
            h,
            &key,
            &format!("c{i}"),
            json!({"column": "agendado", "meta": meta_for(&key)}),
        )
        .await;
    }
    drain(h).await;
    let accepted = h.fake().accepted_events();
    assert_eq!(accepted.len(), 3);
    assert!(
        accepted
            .iter()
            .all(|e| e.test_event_code.as_deref() == Some("TEST12345"))
    );
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    assert_eq!(status["sites"][0]["pixel"]["testMode"], true);
}

/// The pixel turned off between the queue and the send: the row fails,
/// nothing goes.
async fn a_pixel_turned_off_before_the_send(h: &Harness) {
    record(
        h,
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
    drain(h).await;
    let off = rows(h, "loja-x")
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
}

/// The list pages newest first by (createdAt, eventId); a page past 50 is
/// refused.
async fn the_list_pages_newest_first(h: &Harness) {
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

/// Leads trickling in over a few seconds reach Meta together: the local
/// poller honours the send queue mapping's batch size and 5-second
/// batching window from `template.yaml`, as Lambda's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leads_trickling_in_reach_meta_in_one_request_after_the_batching_window() {
    let h = Harness::start().await;
    let queue = h.runner().stack.queue("SendQueue").expect("the send queue");
    assert_eq!(queue.batching_window_ms, 5_000, "read from template.yaml");
    assert_eq!(queue.consumer.as_ref().map(|(_, b)| *b), Some(5_000));
    loja_with_pixel(&h).await;
    let events = |h: &Harness| {
        h.fake()
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/events"))
            .count()
    };
    // A lead a second; the poller runs in between.
    for (i, key) in ["ana", "bia", "caio", "duda", "edu"].iter().enumerate() {
        record(
            &h,
            key,
            &format!("c{i}"),
            json!({"column": "agendado", "meta": meta_for(key)}),
        )
        .await;
        h.runner().poll().await.unwrap();
        assert_eq!(events(&h), 0, "the window is still open after lead {i}");
        h.runner().advance(1_000).await.unwrap();
    }
    // Five seconds after the first lead, the window closes: one request.
    let polled = h.runner().poll().await.unwrap();
    assert_eq!(polled.batches, 1);
    assert_eq!(events(&h), 1, "one request for every lead");
    assert_eq!(
        h.fake().accepted_events().len(),
        rows(&h, "loja-x").await.len()
    );
}

/// A poller that looks often while the window is open receives each
/// message once: thirty polls inside the window (more than the send
/// queue's `maxReceiveCount` of 20) and the lead still reaches Meta when
/// the window closes, not the dead-letter queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_inside_the_batching_window_receives_each_message_once() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    record(
        &h,
        "ana",
        "c0",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    for _ in 0..30 {
        let polled = h.runner().poll().await.unwrap();
        assert_eq!(polled.batches, 0, "the window is still open");
        h.runner().advance(100).await.unwrap();
    }
    h.runner().advance(2_000).await.unwrap();
    let polled = h.runner().poll().await.unwrap();
    assert_eq!(polled.batches, 1);
    assert_eq!(h.fake().accepted_events().len(), 1);
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 1));
}
