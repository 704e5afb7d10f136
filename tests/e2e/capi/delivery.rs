//! Delivery as SQS gives it (duplicates, lost messages), the ads live runs
//! name, test codes and the history's cursor.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::time::MINUTE_MS;
use adtrail_fake_meta::LOJA_PIXEL;
use adtrail_tests::capi::*;
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

/// The sender never claims a row it could not send and record before the
/// invocation's end: the message goes back to the queue at once, the row
/// untouched (as a message still waiting would leave it), and the next
/// invocation sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_near_its_deadline_starts_no_request_and_hands_the_rows_back() {
    use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
    use lambda_runtime::{Context, LambdaEvent};
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    schedule_ana(&h).await;
    // Its message waited in a backlog: the row came due 10 minutes ago
    // (less than the 15 after which the sweeper takes a waiting message
    // for lost, as it would take this one).
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    let url = h.store().names.send_queue_url.clone();
    let received = h
        .store()
        .sqs
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(received.len(), 1);
    let mut message = SqsMessage::default();
    message.message_id = received[0].message_id.clone();
    message.receipt_handle = received[0].receipt_handle.clone();
    message.body = received[0].body.clone();
    let mut event = SqsEvent::default();
    event.records = vec![message];
    // Five seconds left: less than Meta's timeout.
    let mut ctx = Context::default();
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    ctx.deadline = wall + 5_000;
    let answer = adtrail_capi_sender::handle(&h.runner().sender, LambdaEvent::new(event, ctx))
        .await
        .unwrap();
    assert_eq!(answer.batch_item_failures.len(), 1, "the message goes back");
    assert!(h.fake().accepted_events().is_empty(), "no request started");
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.status, row.attempts),
        (ConversionStatus::Pending, 0),
        "no attempt counted"
    );
    // Handed back, not lost: the sweeper leaves it to its message.
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    // Visible again at once: the next invocation sends it, first attempt.
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 1);
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 1));
}

/// A batch larger than the sender can claim, send and record before its
/// deadline (a slow day for DynamoDB) is worked in part: it claims a
/// slice, sees that a second would leave no time to record both, and
/// hands the rest back unclaimed. Every row still goes once, at its first
/// attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_too_large_for_the_time_left_is_claimed_in_part_and_the_rest_handed_back() {
    use adtrail_capi_sender::{CLAIM_SLICE, RECORD_MARGIN};
    use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
    use lambda_runtime::{Context, LambdaEvent};
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let n = CLAIM_SLICE + 100;
    let events: Vec<Value> = (0..n).map(|i| purchase(&format!("p-{i}"), now)).collect();
    // A hundred a request: the API takes 64 KB a body.
    for chunk in events.chunks(100) {
        h.expect(
            202,
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": chunk})),
        )
        .await;
    }
    let url = h.store().names.send_queue_url.clone();
    let mut records = vec![];
    while records.len() < n {
        let got = h
            .store()
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default();
        assert!(
            !got.is_empty(),
            "{} of {n} messages received",
            records.len()
        );
        for m in got {
            let mut message = SqsMessage::default();
            message.message_id = m.message_id;
            message.receipt_handle = m.receipt_handle;
            message.body = m.body;
            records.push(message);
        }
    }
    let mut event = SqsEvent::default();
    event.records = records;
    // Time for Meta's timeout, the margin to record and 400 ms more: the
    // first slice starts; claiming it takes moto far more than 200 ms, so
    // claiming and recording a second could not end in time.
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let reserve = h.runner().sender.graph.config().timeout + RECORD_MARGIN;
    let mut ctx = Context::default();
    ctx.deadline = wall + reserve.as_millis() as u64 + 400;
    h.store().counter.reset();
    let answer = adtrail_capi_sender::handle(&h.runner().sender, LambdaEvent::new(event, ctx))
        .await
        .unwrap();
    // Read units, not requests: the suite's injected faults hand a
    // BatchGetItem's keys back now and then, and their retry is another
    // request that reads nothing twice.
    let units = h.store().counter.units_by();
    let read = units.get("BatchGet conv").map_or(0.0, |(_, read, _)| *read);
    assert_eq!(
        read,
        CLAIM_SLICE as f64 / 2.0,
        "one slice read to claim (half a unit a row, eventually), not the whole batch: {units:?}"
    );
    // Whether the first slice went or was handed back with its attempt,
    // nothing is left leased and what went is what Meta holds.
    let after = rows(&h, "loja-x").await;
    let sent = after
        .iter()
        .filter(|r| r.status == ConversionStatus::Sent)
        .count();
    assert!(
        after
            .iter()
            .all(|r| r.status == ConversionStatus::Sent || r.attempts == 0),
        "no row left holding an attempt"
    );
    assert_eq!(h.fake().accepted_events().len(), sent);
    assert_eq!(answer.batch_item_failures.len(), n - sent);
    assert!(answer.batch_item_failures.len() >= n - CLAIM_SLICE);
    // The next invocations, with Lambda's time, send the rest.
    drain(&h).await;
    let after = rows(&h, "loja-x").await;
    assert_eq!(after.len(), n);
    assert!(
        after
            .iter()
            .all(|r| (r.status, r.attempts) == (ConversionStatus::Sent, 1)),
        "each sent at its first attempt"
    );
    let mut ids: Vec<String> = h
        .fake()
        .accepted_events()
        .iter()
        .map(|e| e.event_id.clone())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "each event at Meta once");
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
