//! The sender against its Lambda deadline: it claims no more rows than it
//! can send and record in time, starts no request it could not finish,
//! and hands the rest back to the queue at once.

use adtrail_capi_sender::{CLAIM_SLICE, RECORD_MARGIN};
use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::time::MINUTE_MS;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use aws_lambda_events::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{Context, LambdaEvent};
use serde_json::{Value, json};

use super::drain;

/// The send queue's next `n` messages, as Lambda hands them to the sender.
async fn received(h: &Harness, n: usize) -> SqsEvent {
    let url = h.store().names.send_queue_url.clone();
    let mut event = SqsEvent::default();
    while event.records.len() < n {
        let got = h
            .store()
            .sqs
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive")
            .messages
            .unwrap_or_default();
        assert!(
            !got.is_empty(),
            "{} of {n} messages received",
            event.records.len()
        );
        for m in got {
            let mut message = SqsMessage::default();
            message.message_id = m.message_id;
            message.receipt_handle = m.receipt_handle;
            message.body = m.body;
            event.records.push(message);
        }
    }
    event
}

/// The sender's handler on `event`, its deadline `left_ms` from now on the
/// wall clock (Lambda's deadline is wall-clock time).
async fn invoke(h: &Harness, event: SqsEvent, left_ms: u64) -> SqsBatchResponse {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64;
    let mut ctx = Context::default();
    ctx.deadline = wall + left_ms;
    adtrail_capi_sender::handle(&h.runner().sender, LambdaEvent::new(event, ctx))
        .await
        .expect("the handler answers")
}

/// The sender never claims a row it could not send and record before the
/// invocation's end: the message goes back to the queue at once, the row
/// untouched (as a message still waiting would leave it), and the next
/// invocation sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_near_its_deadline_starts_no_request_and_hands_the_rows_back() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    schedule_ana(&h).await;
    // Its message waited in a backlog: the row came due 10 minutes ago
    // (less than the 15 after which the sweeper takes a waiting message
    // for lost, as it would take this one).
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    let event = received(&h, 1).await;
    // Five seconds left: less than Meta's timeout.
    let answer = invoke(&h, event, 5_000).await;
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
    let h = Harness::start().await;
    // Counts updates: a request the injected faults fail is retried and
    // would be counted again.
    h.runner().stack.cloud.faults.set_share(0.0);
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
    let event = received(&h, n).await;
    // Time for Meta's timeout, the margin to record and 400 ms more: the
    // first slice starts; claiming it takes moto far more than 200 ms, so
    // claiming and recording a second could not end in time.
    let reserve = h.runner().sender.graph.config().timeout + RECORD_MARGIN;
    h.store().counter.reset();
    let answer = invoke(&h, event, reserve.as_millis() as u64 + 400).await;
    let units = h.store().counter.units_by();
    let updates = units
        .get("Update conv")
        .map_or(0, |(_, _, requests)| *requests);
    assert_eq!(
        updates,
        2 * CLAIM_SLICE as u64,
        "one slice claimed (an update a row) and each of its rows ended (another), not the whole batch: {units:?}"
    );
    assert!(
        !units.contains_key("BatchGet conv"),
        "a claim reads nothing first: {units:?}"
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
