//! Meta's answers as they really come: accepted and never answered (the
//! row goes again with its `event_id`), and a throttle with a regain time.

use adtrail_domain::capi::{ConversionStatus, SEND_LEASE_MS};
use adtrail_domain::time::MINUTE_MS;
use adtrail_store::keys::conv_sk;
use adtrail_store::sending::Claim;
use adtrail_tests::capi::*;
use adtrail_tests::*;

use super::drain;

/// Meta takes the events and its answer never comes: the sender cannot
/// know, so the row stays pending, marked unsure, and goes again with the
/// same `event_id` (Meta's deduplication drops the copy); it is never
/// failed for attempts while Meta may hold it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_never_comes_sends_again_with_the_same_event_id() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    // Every answer lost for the first three attempts, 5xx after.
    h.fake().tune(|k| k.accept_then_timeout = 3);
    schedule_ana(&h).await;
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.status, row.attempts, row.unsure),
        (ConversionStatus::Pending, 1, true)
    );
    assert!(
        row.last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("META_UNAVAILABLE: Meta did not answer in time")),
        "{row:?}"
    );
    h.runner().advance(MINUTE_MS).await.unwrap();
    drain(&h).await;
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    // Three attempts spent, Meta holds the event three times over: the
    // row is not failed; a fourth goes ten minutes later and is answered.
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Pending, 3));
    h.fake().tune(|k| k.fail_5xx = 1);
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(
        (row.status, row.attempts),
        (ConversionStatus::Pending, 4),
        "a 5xx does not fail a row Meta may hold"
    );
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 5));
    let accepted = h.fake().accepted_events();
    assert_eq!(
        accepted.len(),
        4,
        "taken three times unanswered, once answered"
    );
    assert!(accepted.iter().all(|e| e.event_id == row.event_id));
    assert_eq!(h.fake().unanswered_events(), 3);
}

/// A throttled send waits for the regain time Meta gives in its usage
/// headers, not just the schedule's minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_send_waits_for_metas_regain_time() {
    use adtrail_fake_meta::Throttle;
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    h.fake().tune(|k| {
        k.throttle = Some(Throttle {
            code: 80_000,
            remaining: 1,
            regain_minutes: 45,
            only_path: Some("/events".into()),
        })
    });
    schedule_ana(&h).await;
    let t = h.now();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(row.next_attempt_at, Some(t + 45 * MINUTE_MS), "{row:?}");
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    assert!(h.fake().accepted_events().is_empty(), "still waiting");
    h.runner().advance(35 * MINUTE_MS).await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 2));
}

/// A sender counts its sends (with a receipt of them) before it writes
/// each on its row. One that dies in between leaves the row pending under
/// its lease, and counted: the next claim, once the lease ran out, ends the
/// row as the receipt says, without sending it again or counting it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_that_dies_after_counting_is_finished_by_the_next_claim() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    h.runner().stack.cloud.kill_recordings(1);
    schedule_ana(&h).await;
    drain(&h).await;
    assert_eq!(h.runner().stack.cloud.killed_recordings(), 1);
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(row.status, ConversionStatus::Pending, "{row:?}");

    assert_eq!(pending_sent(&h).await, (0, 1), "counted with its receipt");
    // The lease runs out; the sweeper finds the late row.
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    h.runner().sweep().await.unwrap();
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!((row.status, row.attempts), (ConversionStatus::Sent, 1));
    assert!(row.hashes.is_none(), "its hashes erased");
    assert_eq!(h.fake().accepted_events().len(), 1, "not sent again");
    assert_eq!(pending_sent(&h).await, (0, 1), "counted once");
}

/// A sender that dies after counting a whole batch leaves every row
/// pending under its lease. A claim of them all once it ran out (the
/// sweeper's messages, or the queue's own redelivery) ends each as the
/// receipt says: the lease's receipts read once, nothing sent or counted
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_sender_died_after_counting_is_ended_by_one_claim() {
    let h = Harness::start().await;
    // Counts requests: one the injected faults fail is retried and would
    // be counted again.
    h.runner().stack.cloud.faults.set_share(0.0);
    loja_with_pixel(&h).await;
    let now = h.now();
    let ids = ["d-1", "d-2", "d-3", "d-4", "d-5"];
    let events = ids.iter().map(|id| purchase(id, now)).collect();
    assert_eq!(post_events(&h, events).await["queued"], 5);
    h.runner().stack.cloud.kill_recordings(1);
    drain(&h).await;
    assert_eq!(h.runner().stack.cloud.killed_recordings(), 1);
    assert_eq!(pending_sent(&h).await, (0, 5), "counted with its receipt");
    assert_eq!(h.fake().accepted_events().len(), 5);

    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    let keys: Vec<(String, String)> = rows(&h, "loja-x")
        .await
        .into_iter()
        .map(|r| ("loja-x".to_owned(), r.sk))
        .collect();
    // The sender's own clients: its role judges each call, and the
    // stack's counter counts them.
    let sender = h.runner().stack.store_for("CapiSenderFunction");
    sender.counter.reset();
    let claims = sender
        .conversions()
        .claim_sends(&keys, "another-sender", SEND_LEASE_MS, h.now())
        .await
        .unwrap();
    assert!(claims.iter().all(|c| *c == Claim::Gone), "{claims:?}");
    let units = sender.counter.units_by();
    assert_eq!(
        units.get("Query receipt").map(|(_, _, requests)| *requests),
        Some(1),
        "the lease's receipts read once: {units:?}"
    );
    for row in rows(&h, "loja-x").await {
        assert_eq!(row.status, ConversionStatus::Sent, "{row:?}");
        assert!(row.hashes.is_none(), "its hashes erased");
    }
    assert_eq!(h.fake().accepted_events().len(), 5, "not sent again");
    assert_eq!(pending_sent(&h).await, (0, 5), "counted once");
}

/// A refused claim answers the row as it was, with the refusal itself
/// (`ReturnValuesOnConditionCheckFailure`): a sent row is `Gone`, a row
/// another sender holds waits for its lease, and only a row that does
/// not exist (DynamoDB's refusal carries none) is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_claim_answers_the_row_without_reading_it() {
    let h = Harness::start().await;
    // Counts requests, as above.
    h.runner().stack.cloud.faults.set_share(0.0);
    loja_with_pixel(&h).await;
    let now = h.now();
    post_events(&h, vec![purchase("w-1", now)]).await;
    drain(&h).await;
    post_events(&h, vec![purchase("w-2", now)]).await;
    let key = |id: &str, rows: &[adtrail_domain::capi::Conversion]| {
        let row = rows.iter().find(|r| r.event_id == id).expect("its row");
        ("loja-x".to_owned(), row.sk.clone())
    };
    let rows = rows(&h, "loja-x").await;
    let (sent, held) = (key("w-1", &rows), key("w-2", &rows));
    let missing = ("loja-x".to_owned(), conv_sk(now, "never-posted"));

    let sender = h.runner().stack.store_for("CapiSenderFunction");
    let first = sender
        .conversions()
        .claim_sends(std::slice::from_ref(&held), "sender-a", SEND_LEASE_MS, now)
        .await
        .unwrap();
    assert!(matches!(first[0], Claim::Claimed(_)), "{first:?}");
    sender.counter.reset();
    let claims = sender
        .conversions()
        .claim_sends(&[sent, held, missing], "sender-b", SEND_LEASE_MS, now)
        .await
        .unwrap();
    assert_eq!(claims[0], Claim::Gone, "sent: {claims:?}");
    assert_eq!(claims[1], Claim::Wait(SEND_LEASE_MS), "held: {claims:?}");
    assert_eq!(claims[2], Claim::Gone, "missing: {claims:?}");
    let units = sender.counter.units_by();
    let requests = |label: &str| units.get(label).map_or(0, |(_, _, n)| *n);
    assert_eq!(requests("Update conv"), 3, "{units:?}");
    assert_eq!(
        requests("Get conv"),
        1,
        "only the missing row read: {units:?}"
    );
}
