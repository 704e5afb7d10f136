//! The sender against its Lambda deadline: it claims no more rows than it
//! can send and record in time, starts no request it could not finish,
//! and hands the rest back to the queue at once.

use adtrail_capi_sender::{CLAIM_SLICE, RECORD_MARGIN};
use adtrail_domain::capi::{ConversionStatus, SEND_LEASE_MS};
use adtrail_domain::time::MINUTE_MS;
use adtrail_tests::capi::*;
use adtrail_tests::queues::take_all;
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

/// Loja X's `n` purchases, posted a hundred a request (the API takes
/// 64 KB a body), and their messages as Lambda hands them to the sender.
async fn post_purchases(h: &Harness, n: usize) -> SqsEvent {
    let now = h.now();
    let events: Vec<Value> = (0..n).map(|i| purchase(&format!("p-{i}"), now)).collect();
    for chunk in events.chunks(100) {
        h.expect(
            202,
            "POST",
            "/v1/sites/loja-x/events",
            Some(json!({"events": chunk})),
        )
        .await;
    }
    received(h, n).await
}

/// Plays SQS's part after a direct invoke, once the delays have run:
/// deletes the messages the answer does not hand back, and makes those it
/// does visible again.
async fn settle(h: &Harness, event: &SqsEvent, answer: &SqsBatchResponse) {
    let url = h.store().names.send_queue_url.clone();
    let back: Vec<&str> = answer
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    for m in &event.records {
        let receipt = m.receipt_handle.as_deref().expect("a receipt");
        if back.contains(&m.message_id.as_deref().unwrap_or_default()) {
            let visible = h.store().sqs.change_message_visibility();
            visible
                .queue_url(&url)
                .receipt_handle(receipt)
                .visibility_timeout(0)
                .send()
                .await
                .expect("visible");
        } else {
            let delete = h.store().sqs.delete_message().queue_url(&url);
            delete.receipt_handle(receipt).send().await.expect("delete");
        }
    }
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
    let n = CLAIM_SLICE + 100;
    let event = post_purchases(&h, n).await;
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

/// The messages a batch keeps for later are held ten a request, several
/// requests at once, and the entries SQS fails on its side go again: each
/// message comes back when its delay says, not after the queue's six
/// minutes. A receipt SQS does not know is refused alone, and said; and
/// none is asked once the invocation's time to ask has run out.
#[tokio::test]
async fn holds_go_ten_a_request_and_entries_sqs_fails_go_again() {
    let h = Harness::start().await;
    let cloud = &h.runner().stack.cloud;
    cloud.faults.set_batch_share(0.0);
    let url = h.store().names.send_queue_url.clone();
    let bodies: Vec<String> = (0..25)
        .map(|i| json!({"siteId": "loja-x", "key": format!("k{i}")}).to_string())
        .collect();
    assert_eq!(
        h.store().queues().send_batch(&url, &bodies).await.unwrap(),
        0
    );
    let event = received(&h, 25).await;
    let mut holds: Vec<(&str, i64)> = event
        .records
        .iter()
        .map(|m| (m.receipt_handle.as_deref().expect("a receipt"), 0))
        .collect();
    holds.insert(7, ("not-a-receipt", 0));
    let calls = |report: &adtrail_local::cloud::CallReport| {
        report.calls["CapiSenderFunction"]
            .get("sqs:ChangeMessageVisibilityBatch")
            .copied()
            .unwrap_or(0)
    };
    let before = calls(&cloud.report());
    // Past the invocation's time to ask them: none is asked.
    let sender = &h.runner().sender;
    let late = sender
        .visibility
        .hold_all(
            sender.store.queues(),
            &holds,
            Some(std::time::Instant::now()),
        )
        .await;
    assert!(late.iter().all(Result::is_err), "{late:?}");
    assert_eq!(calls(&cloud.report()), before);
    cloud.faults.refuse_next_batches(2);
    let held = sender
        .visibility
        .hold_all(sender.store.queues(), &holds, None)
        .await;
    assert_eq!(held.len(), 26);
    for (i, answer) in held.iter().enumerate() {
        if i == 7 {
            let why = answer.as_ref().expect_err("an unknown receipt is refused");
            assert!(why.starts_with("ReceiptHandleIsInvalid"), "{why}");
        } else {
            assert_eq!(answer, &Ok(()), "hold {i}");
        }
    }
    assert_eq!(
        cloud.faults.injected().get("batch entries failed"),
        Some(&2)
    );
    // Three requests of up to ten, and the two SQS failed sent again.
    assert_eq!(calls(&cloud.report()) - before, 5);
    // Visible again at once, as the holds said.
    let mut back = take_all(h.store(), &url).await;
    back.sort();
    let mut sent = bodies.clone();
    sent.sort();
    assert_eq!(back, sent);
}

/// A batch whose recording runs into its deadline (DynamoDB turned slow
/// after the sends) stops before its last seconds rather than be ended by
/// Lambda mid-write: what it recorded stands, the rows it could not record
/// keep their lease, and their messages come back when the lease ends, to
/// be sent again, unsure, as after a sender that died.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_that_runs_into_the_deadline_stops_and_leaves_the_rest_leased() {
    let h = Harness::start_impatient(std::time::Duration::from_secs(2)).await;
    let cloud = h.runner().stack.cloud.clone();
    cloud.faults.set_share(0.0);
    cloud.faults.set_batch_share(0.0);
    loja_with_pixel(&h).await;
    let n = 300;
    let event = post_purchases(&h, n).await;
    // Twenty seconds to claim the rows (seconds on moto, more beside
    // other tests) and send them: recording stops 25 s in (5 s before
    // the end). Once Meta holds the events, each call to AWS takes 4 s,
    // and the first hundred's ends (a transaction, then 100 updates 16 at
    // a time) take 32 s: past the stop, whenever they began.
    let fake = h.fake().clone();
    let slowing = tokio::spawn(async move {
        for _ in 0..6_000 {
            if !fake.accepted_events().is_empty() {
                cloud.set_round_trip(std::time::Duration::from_secs(4));
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        false
    });
    let reserve = h.runner().sender.graph.config().timeout + RECORD_MARGIN;
    let event_records = event.clone();
    let answer = invoke(&h, event, reserve.as_millis() as u64 + 20_000).await;
    assert!(slowing.await.unwrap(), "Meta took the events");
    h.runner()
        .stack
        .cloud
        .set_round_trip(std::time::Duration::ZERO);
    assert_eq!(h.fake().accepted_events().len(), n, "all sent at once");
    let after = rows(&h, "loja-x").await;
    let sent = after
        .iter()
        .filter(|r| r.status == ConversionStatus::Sent)
        .count();
    assert_eq!(sent, 100, "one hundred recorded, then it stopped");
    assert!(
        after
            .iter()
            .all(|r| r.status == ConversionStatus::Sent || r.lease_until.is_some()),
        "the rest keep their lease"
    );
    assert_eq!(answer.batch_item_failures.len(), n - 100);
    // Back when the lease ends: taken over, sent again (Meta deduplicates
    // by event_id), and recorded.
    h.runner().advance(SEND_LEASE_MS + 1_000).await.unwrap();
    settle(&h, &event_records, &answer).await;
    drain(&h).await;
    let after = rows(&h, "loja-x").await;
    assert!(
        after.iter().all(|r| r.status == ConversionStatus::Sent),
        "each sent in the end"
    );
    assert_eq!(h.fake().accepted_events().len(), n + (n - 100));
}

/// A request Meta rejects whole for one invalid event, answered late: the
/// halves that would isolate the event, each waiting on Meta again, are
/// not started without the time to end and be recorded. The rows go back
/// with their attempt given back, and the next invocation isolates it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_halves_of_a_rejected_request_wait_for_an_invocation_with_the_time() {
    let h = Harness::start_impatient(std::time::Duration::from_secs(3)).await;
    h.runner().stack.cloud.faults.set_share(0.0);
    loja_with_pixel(&h).await;
    let event = post_purchases(&h, 4).await;
    let bad = rows(&h, "loja-x").await[2].event_id.clone();
    h.fake().tune(|k| {
        k.reject_event_ids = vec![bad.clone()];
        k.slow_path = Some("/events".into());
        k.slow_ms = 2_000;
    });
    h.fake().clear_requests();
    // A request's time and a second to spare: the first request starts,
    // and is answered two seconds later, too late for another.
    let reserve = h.runner().sender.graph.config().timeout + RECORD_MARGIN;
    let answer = invoke(&h, event, reserve.as_millis() as u64 + 1_000).await;
    let posts = |h: &Harness| {
        h.fake()
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/events"))
            .count()
    };
    assert_eq!(posts(&h), 1, "no half started");
    assert_eq!(answer.batch_item_failures.len(), 4, "every message back");
    assert!(
        rows(&h, "loja-x")
            .await
            .iter()
            .all(|r| (r.status, r.attempts) == (ConversionStatus::Pending, 0)),
        "each attempt given back"
    );
    h.fake().tune(|k| k.slow_path = None);
    drain(&h).await;
    let after = rows(&h, "loja-x").await;
    let failed: Vec<_> = after
        .iter()
        .filter(|r| r.status == ConversionStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].event_id, bad);
    assert_eq!(h.fake().accepted_events().len(), 3);
}
