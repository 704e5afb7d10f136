//! Rows posted on their own are written `uncounted`: the end of their first
//! attempt counts them queued, in the counter transaction a sender writes
//! once a batch, with its receipt. Each is counted once whatever stops on
//! the way: a sender that dies after counting a send or a retry, a claim
//! that takes a row over, the sweeper failing a row nobody sent. A lead's
//! new rows are written `uncounted` too.

use adtrail_domain::capi::{ConversionStatus, EventName, SEND_LEASE_MS};
use adtrail_domain::time::{DAY_MS, MINUTE_MS, utc_day};
use adtrail_store::sending::Claim;
use adtrail_tests::capi::*;
use adtrail_tests::*;

use super::drain;

/// Loja X's pending, sent and failed counters, and the pixel's purchases
/// counted queued on the day of `at`.
async fn counted(h: &Harness, at: i64) -> ((i64, i64, i64), i64) {
    counted_as(h, at, EventName::Purchase).await
}

/// [`counted`], for the pixel's `event`.
async fn counted_as(h: &Harness, at: i64, event: EventName) -> ((i64, i64, i64), i64) {
    let conversions = h.store().conversions();
    let c = conversions.conversion_counts("loja-x", None).await.unwrap();
    let day = utc_day(at);
    let metrics = conversions
        .destination_metrics("loja-x", "meta", day, day)
        .await
        .unwrap();
    let queued = metrics
        .get(&day)
        .and_then(|events| events.get(&event))
        .map_or(0, |f| f.queued);
    ((c.pending, c.sent, c.failed), queued)
}

/// A stack with Loja X and its pixel, and its time.
async fn started() -> (Harness, i64) {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let now = h.now();
    (h, now)
}

/// Loja X's only row's status and whether it is uncounted.
async fn state(h: &Harness) -> (ConversionStatus, bool) {
    let row = &rows(h, "loja-x").await[0];
    (row.status, row.uncounted)
}

/// Drains the send queue with a sender that dies after counting its end
/// and before writing it on the row; answers the row, left pending and
/// uncounted.
async fn drain_as_a_dying_sender(h: &Harness) -> adtrail_domain::capi::Conversion {
    h.runner().stack.cloud.kill_recordings(1);
    drain(h).await;
    assert_eq!(h.runner().stack.cloud.killed_recordings(), 1);
    assert_eq!(state(h).await, (ConversionStatus::Pending, true));
    rows(h, "loja-x").await.remove(0)
}

/// Posts one purchase to Loja X at `at`; answers its row.
async fn post_one(h: &Harness, id: &str, at: i64) -> adtrail_domain::capi::Conversion {
    let b = post_events(h, vec![purchase(id, at)]).await;
    assert_eq!(b["queued"], 1, "{b}");
    let rows = rows(h, "loja-x").await;
    let row = rows.iter().find(|r| r.event_id == id).expect("its row");
    assert!(row.uncounted, "{row:?}");
    row.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_posted_on_its_own_is_counted_by_the_end_of_its_first_attempt() {
    let (h, now) = started().await;
    post_one(&h, "u-1", now).await;
    assert_eq!(counted(&h, now).await, ((0, 0, 0), 0), "not counted yet");
    drain(&h).await;
    assert_eq!(state(&h).await, (ConversionStatus::Sent, false));
    assert_eq!(counted(&h, now).await, ((0, 1, 0), 1));
    assert_eq!(meta_ids(&h), ["u-1"]);
}

/// A sender that counts a row's send (queued and sent, with its receipt)
/// and dies before writing it: the next claim ends the row as the receipt
/// says and counts nothing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_that_dies_after_counting_a_posted_row_counts_it_once() {
    let (h, now) = started().await;
    post_one(&h, "u-2", now).await;
    drain_as_a_dying_sender(&h).await;
    assert_eq!(
        counted(&h, now).await,
        ((0, 1, 0), 1),
        "counted with its receipt"
    );
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    h.runner().sweep().await.unwrap();
    drain(&h).await;
    assert_eq!(state(&h).await, (ConversionStatus::Sent, false));
    assert_eq!(counted(&h, now).await, ((0, 1, 0), 1), "counted once");
    assert_eq!(meta_ids(&h), ["u-2"], "not sent again");
}

/// A first attempt Meta answers with a 5xx is a retry: it counts the row
/// queued (its receipt says `queued`). Its sender dies before writing the
/// retry: the sweeper finds the row once its lease ran out, takes its flag
/// off as the receipt says, and the send that follows counts only the send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_posted_row_whose_sender_died_is_counted_queued_once() {
    let (h, now) = started().await;
    post_one(&h, "u-3", now).await;
    h.fake().tune(|k| k.fail_5xx = 1);
    let row = drain_as_a_dying_sender(&h).await;
    assert!(
        row.lease_until.is_some(),
        "its retry never written: {row:?}"
    );
    assert_eq!(counted(&h, now).await, ((1, 0, 0), 1), "counted queued");
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_requeued, 1);
    assert_eq!(state(&h).await, (ConversionStatus::Pending, false));
    drain(&h).await;
    let row = &rows(&h, "loja-x").await[0];
    assert_eq!(row.status, ConversionStatus::Sent, "{row:?}");
    assert_eq!(counted(&h, now).await, ((0, 1, 0), 1), "queued once");
}

/// A claim that takes over a row whose last sender counted its send and
/// died (before the sweeper settles it) ends the row as that sender's
/// receipt says: nothing to send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_takes_a_counted_row_over_ends_it_as_its_receipt_says() {
    let (h, now) = started().await;
    let row = post_one(&h, "u-4", now).await;
    drain_as_a_dying_sender(&h).await;
    assert_eq!(counted(&h, now).await, ((0, 1, 0), 1));
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    let claim = h
        .store()
        .conversions()
        .claim_send("loja-x", &row.sk, "another-sender", SEND_LEASE_MS, h.now())
        .await
        .unwrap();
    assert_eq!(claim, Claim::Gone);
    assert_eq!(state(&h).await, (ConversionStatus::Sent, false));
    assert!(
        rows(&h, "loja-x").await[0].hashes.is_none(),
        "hashes erased"
    );
    assert_eq!(counted(&h, now).await, ((0, 1, 0), 1), "counted once");
    assert_eq!(meta_ids(&h), ["u-4"]);
}

/// A row whose message was lost and whose event is past Meta's seven days
/// by the time the sweeper finds it is failed there: counted queued (on the
/// day it was posted) and failed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_posted_row_the_sweeper_fails_is_counted_queued_and_failed() {
    let (h, now) = started().await;
    post_one(&h, "u-5", now - 7 * DAY_MS + 5 * MINUTE_MS).await;
    lose_queued_sends(&h).await;
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().sweep().await.unwrap().sends_failed, 1);
    assert_eq!(state(&h).await, (ConversionStatus::Failed, false));
    assert_eq!(counted(&h, now).await, ((0, 0, 1), 1));
    assert!(h.fake().accepted_events().is_empty());
}

/// A lead's new row is put uncounted too (its change's transaction moves
/// no counter item): the end of its first attempt counts it queued and
/// sent, on the day it was queued. A lead removed before its row was sent
/// takes nothing back from counters that never had it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_row_is_counted_by_its_first_end_and_a_removed_one_never_was() {
    let (h, now) = started().await;
    let schedule = || counted_as(&h, now, EventName::Schedule);
    let (s, _) = schedule_ana(&h).await;
    assert_eq!(s, 201);
    assert_eq!(state(&h).await, (ConversionStatus::Pending, true));
    assert_eq!(schedule().await, ((0, 0, 0), 0), "not counted yet");
    drain(&h).await;
    assert_eq!(state(&h).await, (ConversionStatus::Sent, false));
    assert_eq!(schedule().await, ((0, 1, 0), 1));

    let (s, _) = record(
        &h,
        "bia",
        "c-bia",
        serde_json::json!({"column": "agendado", "meta": meta_for("bia")}),
    )
    .await;
    assert_eq!(s, 201);
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/leads/bia", None).await;
    assert_eq!(s, 200);
    drain(&h).await;
    assert_eq!(rows(&h, "loja-x").await.len(), 1, "Bia's row went with her");
    assert_eq!(schedule().await, ((0, 1, 0), 1), "nothing taken back");
}
