//! Failed sends: the retry schedule, final failures, one invalid event
//! isolated, a refused token stopping its owner.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::capi::{EventName, event_id};
use adtrail_domain::time::{DAY_MS, MINUTE_MS};
use adtrail_fake_meta::LOJA_PIXEL;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::{drain, lead_id};

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
    schedule_ana(&h).await;
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
    let started = Harness::start().await;
    let h = &started;
    loja_with_pixel(h).await;
    a_refused_token_stops_the_connections_pixel(h).await;
    a_new_token_sends_again(h).await;
    a_pixels_own_token_refused_stops_it_until_a_new_one(h).await;
}

/// Meta refuses the connection's token: the row fails, the connection
/// stops, and its pixel queues nothing more.
async fn a_refused_token_stops_the_connections_pixel(h: &Harness) {
    h.fake().kill_token(TOKEN);
    record(
        h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    drain(h).await;
    let row = &rows(h, "loja-x").await[0];
    assert_eq!(row.status, ConversionStatus::Failed);
    assert!(
        row.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_TOKEN_INVALID")
    );
    let conn = h.connection("agency").await;
    assert_eq!(conn.status.as_str(), "invalid");
    // The connection's pixel stops: nothing more is queued.
    let (_, b) = record(
        h,
        "bia",
        "c2",
        json!({"column": "agendado", "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]));
}

/// A new token: sending again; an old token refused after a new one was
/// stored stops nothing.
async fn a_new_token_sends_again(h: &Harness) {
    h.connect("EAAB-sample-agency-token-0002").await;
    let (_, b) = record(
        h,
        "caio",
        "c3",
        json!({"column": "agendado", "meta": meta_for("caio")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]));
    drain(h).await;
    assert_eq!(h.fake().accepted_events().len(), 1);
    // An old token refused after a new one was stored stops nothing.
    let version = h.connection("agency").await.token_version;
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
    let conn = h.connection("agency").await;
    assert_eq!(
        (conn.status.as_str(), conn.token_version),
        ("active", version)
    );
}

/// A pixel's own token refused: the pixel stops until a token is stored.
async fn a_pixels_own_token_refused_stops_it_until_a_new_one(h: &Harness) {
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
        h,
        "caio",
        "c4",
        json!({"stage": "won", "revenueCents": 500, "meta": meta_for("caio")}),
    )
    .await;
    drain(h).await;
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
        h,
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
        h,
        "bia",
        "c6",
        json!({"stage": "won", "revenueCents": 600, "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Purchase"]));
    drain(h).await;
    assert_eq!(h.fake().accepted_events().len(), 2);
}

#[tokio::test]
async fn an_answer_that_received_fewer_events_than_sent_is_an_attempt_to_repeat() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    // Meta takes the events but says it received one fewer.
    h.fake().tune(|k| k.short_receipts = 1);
    schedule_ana(&h).await;
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Pending, 1));
    assert_eq!(
        row.last_error.as_deref(),
        Some("META_UNAVAILABLE: Meta received 0 of 1 events")
    );
    h.runner().advance(MINUTE_MS).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 2));
    // Sent again with the same event_id, which Meta deduplicates.
    let ids: Vec<String> = h
        .fake()
        .accepted_events()
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1]);
}
