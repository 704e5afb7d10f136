//! A posted batch's rows watched as one: no `work` entry of their own, a
//! send batch item in the index instead, through which the sweeper finds
//! a lost send and which it deletes once none of its rows is pending.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::time::MINUTE_MS;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::drain;

/// The table's items whose partition key starts with `prefix`, as text.
async fn items_of(h: &Harness, prefix: &str) -> Vec<String> {
    h.table_text()
        .await
        .lines()
        .filter(|l| l.contains(&format!("\"pk\": S(\"{prefix}")))
        .map(str::to_owned)
        .collect()
}

/// Posts `ids` as purchases; answers how many rows it queued.
async fn post(h: &Harness, ids: &[&str]) -> i64 {
    let now = h.now();
    let events: Vec<_> = ids.iter().map(|id| purchase(id, now)).collect();
    let b = h
        .expect(
            202,
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": events})),
        )
        .await;
    b["queued"].as_i64().expect("queued")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posted_batchs_lost_sends_are_found_through_its_send_batch() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    // Two rows: each with its own entry, no batch.
    assert_eq!(post(&h, &["a-1", "a-2"]).await, 2);
    assert!(items_of(&h, "sendbatch#").await.is_empty());
    let own = items_of(&h, "conv#loja-x").await;
    assert_eq!(own.len(), 2);
    assert!(own.iter().all(|l| l.contains("workShard")), "{own:#?}");
    drain(&h).await;

    // Five rows: none with an entry of its own, one batch for them.
    h.runner().advance(1_000).await.unwrap();
    assert_eq!(post(&h, &["b-1", "b-2", "b-3", "b-4", "b-5"]).await, 5);
    let batches = items_of(&h, "sendbatch#loja-x").await;
    assert_eq!(batches.len(), 1, "{batches:#?}");
    assert!(batches[0].contains("workShard"), "{}", batches[0]);
    let watched: Vec<_> = items_of(&h, "conv#loja-x")
        .await
        .into_iter()
        .filter(|l| l.contains("S(\"pending\")") && !l.contains("workShard"))
        .collect();
    assert_eq!(watched.len(), 5, "{watched:#?}");

    // Their messages lost: the sweeper finds them through the batch once
    // they are 15 minutes late, counting the lost attempt.
    lose_queued_sends(&h).await;
    h.runner().advance(15 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    h.runner().advance(1_000).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 5);
    // Looked at again only once late again.
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    drain(&h).await;
    let sent: Vec<_> = rows(&h, "loja-x")
        .await
        .into_iter()
        .filter(|r| r.event_id.starts_with("b-"))
        .map(|r| (r.status, r.attempts))
        .collect();
    assert_eq!(sent, vec![(ConversionStatus::Sent, 2); 5]);
    assert_eq!(h.fake().accepted_events().len(), 7, "each sent once");
    assert_eq!(items_of(&h, "sendbatch#loja-x").await.len(), 1);
    // None pending: the next look deletes the batch, sending nothing.
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    assert!(items_of(&h, "sendbatch#").await.is_empty());

    // A batch sent at once is deleted on its first look.
    assert_eq!(post(&h, &["c-1", "c-2", "c-3", "c-4"]).await, 4);
    drain(&h).await;
    assert_eq!(items_of(&h, "sendbatch#loja-x").await.len(), 1);
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    let report = h.runner().sweep().await.unwrap();
    assert_eq!((report.sends_requeued, report.sends_failed), (0, 0));
    assert!(items_of(&h, "sendbatch#").await.is_empty());
    assert_eq!(h.fake().accepted_events().len(), 11);
    // The counters moved as for rows with entries of their own.
    let day = adtrail_domain::time::utc_day(h.now());
    let from = day - adtrail_domain::time::DAY_MS;
    let m = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/destinations/meta/metrics?from={from}&to={day}"),
            None,
        )
        .await;
    assert_eq!(
        m["totals"],
        json!({"queued": 11, "sent": 11, "failed": 0}),
        "{m}"
    );
}

/// A row of a batch still in a sender's hands keeps the batch: the sweep
/// moves it on rather than delete it, and deletes it once the row ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_a_row_in_a_senders_hands_stays_until_it_ends() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    assert_eq!(post(&h, &["d-1", "d-2", "d-3", "d-4"]).await, 4);
    lose_queued_sends(&h).await;
    let sk = rows(&h, "loja-x").await[0].sk.clone();
    // Claimed ten minutes late by a sender that never ends it.
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    claim_as_dead_sender(&h, &sk).await;
    // 16 minutes late: the three others go again; the held one stays.
    h.runner().advance(6 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 3);
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 3);
    // The lease over: it goes again, unsure, once; then the batch goes.
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 1);
    drain(&h).await;
    let held = rows(&h, "loja-x")
        .await
        .into_iter()
        .find(|r| r.sk == sk)
        .unwrap();
    assert_eq!(
        (held.status, held.attempts, held.unsure),
        (ConversionStatus::Sent, 2, true)
    );
    assert_eq!(h.fake().accepted_events().len(), 4);
    assert_eq!(items_of(&h, "sendbatch#loja-x").await.len(), 1);
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 0);
    assert!(items_of(&h, "sendbatch#").await.is_empty());
}

/// A look at a batch deals with a bounded number of late rows; a batch
/// with more stays late for the next look, which goes on from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_look_at_a_batch_deals_with_a_bounded_number_of_rows() {
    use adtrail_domain::capi::LOST_AFTER_MS;
    use adtrail_store::recovery::Lost;
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    assert_eq!(post(&h, &["e-1", "e-2", "e-3", "e-4", "e-5"]).await, 5);
    lose_queued_sends(&h).await;
    let created_at = rows(&h, "loja-x").await[0].created_at;
    let batch = adtrail_store::keys::send_batch_sk(created_at);
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    let look = || async {
        h.store()
            .conversions()
            .sweep_batch("loja-x", &batch, LOST_AFTER_MS, h.now(), 2)
            .await
            .unwrap()
    };
    let mut requeued = std::collections::BTreeSet::new();
    for expected in [2, 2, 1] {
        let dealt = look().await;
        assert_eq!(dealt.len(), expected, "{dealt:?}");
        assert!(dealt.iter().all(|(_, lost)| *lost == Lost::Requeued));
        requeued.extend(dealt.into_iter().map(|(sk, _)| sk));
    }
    assert_eq!(requeued.len(), 5, "each row once");
    // All requeued: the batch is due again now, and a look before it is
    // late deals with nothing.
    assert!(look().await.is_empty());
    assert_eq!(items_of(&h, "sendbatch#loja-x").await.len(), 1);
}

/// Posts `ids` as purchases at `now`; answers the status and the answer.
async fn post_at(h: &Harness, ids: &[&str], now: i64) -> (u16, serde_json::Value) {
    let events: Vec<_> = ids.iter().map(|id| purchase(id, now)).collect();
    h.call(
        "POST",
        "/v1/sites/loja-x/events",
        Some(json!({"events": events})),
    )
    .await
}

/// A batch's rows are counted with their send batch, which lists them,
/// and then put one by one. An API that dies between the two fails its
/// request; the client's retry writes the rows the batch lists and does
/// not count them again. A request never sent again leaves rows counted
/// that never were: the sweeper takes their counting back once the batch
/// is late, and a retry after that writes them anew (counted as they are
/// sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_counted_and_not_written_is_made_good_by_the_retry_or_the_sweeper() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    let ids = ["f-1", "f-2", "f-3", "f-4", "f-5"];
    h.runner().stack.cloud.kill_posted_rows(2);
    let (status, b) = post_at(&h, &ids, now).await;
    assert!(status >= 500, "{status} {b}");
    assert_eq!(rows(&h, "loja-x").await.len(), 3);
    assert_eq!(pending_sent(&h).await, (5, 0), "counted with the batch");
    // The retry writes the two the batch lists, counting nothing again.
    let (status, b) = post_at(&h, &ids, now).await;
    assert_eq!((status, b["queued"].as_i64()), (202, Some(2)), "{b}");
    assert_eq!(pending_sent(&h).await, (5, 0));
    drain(&h).await;
    assert_eq!(meta_ids(&h), ids, "each sent once");
    assert_eq!(pending_sent(&h).await, (0, 5));

    // Never sent again: the sweeper takes the counting back once late.
    h.runner().advance(1_000).await.unwrap();
    let later = h.now();
    let more = ["g-1", "g-2", "g-3", "g-4"];
    h.runner().stack.cloud.kill_posted_rows(1);
    assert!(post_at(&h, &more, later).await.0 >= 500);
    // Three written (the request failed before queuing them), one never.
    assert_eq!(pending_sent(&h).await, (4, 5));
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 3);
    assert_eq!(
        pending_sent(&h).await,
        (3, 5),
        "the unwritten one taken back"
    );
    drain(&h).await;
    assert_eq!(pending_sent(&h).await, (0, 8));
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    h.runner().sweep().await.unwrap();
    assert!(items_of(&h, "sendbatch#").await.is_empty());
    // A retry after that writes the missing row anew, on its own: it is
    // counted by the end of its first attempt.
    let (status, b) = post_at(&h, &more, later).await;
    assert_eq!((status, b["queued"].as_i64()), (202, Some(1)), "{b}");
    assert_eq!(pending_sent(&h).await, (0, 8), "not counted yet");
    drain(&h).await;
    assert_eq!(pending_sent(&h).await, (0, 9));
    assert_eq!(h.fake().accepted_events().len(), 9, "each once");
}

/// DynamoDB's eventual reads may miss the last second's writes (moto's
/// never do; the local cloud's `stale_gets` makes them): a replayed batch
/// reads its markers only strongly (after their puts failed) and queues
/// nothing again, and a sender reads nothing of the rows it claims (each
/// claim's update answers its row), so a stale read cannot reach it: each
/// row is sent once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_reads_of_markers_and_of_rows_to_claim_change_nothing() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let ids = ["s-1", "s-2", "s-3", "s-4", "s-5"];
    assert_eq!(post(&h, &ids).await, 5);
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 5);

    h.runner().stack.cloud.stale_gets("posted#loja-x", 1);
    assert_eq!(post(&h, &ids).await, 0, "the replay queues nothing");
    assert_eq!(
        h.runner().stack.cloud.stale_gets_left(),
        1,
        "markers are never read eventually: each put finds its replay"
    );
    h.runner().stack.cloud.stale_gets("posted#loja-x", 0);
    drain(&h).await;
    assert_eq!(h.fake().accepted_events().len(), 5);

    h.runner().advance(1_000).await.unwrap();
    assert_eq!(post(&h, &["t-1", "t-2", "t-3", "t-4", "t-5"]).await, 5);
    h.runner().stack.cloud.stale_gets("conv#loja-x", 1);
    drain(&h).await;
    assert_eq!(
        h.runner().stack.cloud.stale_gets_left(),
        1,
        "the rows to claim are never read eventually"
    );
    h.runner().stack.cloud.stale_gets("conv#loja-x", 0);
    assert_eq!(h.fake().accepted_events().len(), 10, "each sent once");
    let sent = rows(&h, "loja-x")
        .await
        .into_iter()
        .filter(|r| r.status == ConversionStatus::Sent)
        .count();
    assert_eq!(sent, 10);
}
