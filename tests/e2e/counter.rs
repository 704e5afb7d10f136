//! The bench's request counter against moto: what it books as each unit of
//! work's, and what as the idle stack's.

use adtrail_tests::*;

/// The cost bench prices a receive that got nothing as the event sources'
/// pollers' own: the counter tells it from one that got a message, as
/// moto answers them.
#[tokio::test]
async fn the_counter_tells_an_empty_receive_from_one_that_got_a_message() {
    use adtrail_store::counter::EMPTY_RECEIVES;
    let h = Harness::start().await;
    let url = h.store().names.send_queue_url.clone();
    h.store()
        .queues()
        .send_batch(&url, &["{}".to_owned()])
        .await
        .unwrap();
    // The sender's clients count (the stack's own do not, as a function's
    // in Lambda do not), into the stack's counter.
    let sender = h.runner().stack.store_for("CapiSenderFunction");
    let store = &sender;
    store.counter.reset();
    // Long polls, as Lambda's pollers make them: a receive waits for the
    // message rather than sampling the queue once.
    let url = &url;
    let receive = |wait: i32| async move {
        store
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .wait_time_seconds(wait)
            .send()
            .await
            .unwrap()
            .messages
            .unwrap_or_default()
            .len()
    };
    assert_eq!(receive(10).await, 1);
    assert_eq!(store.counter.get(EMPTY_RECEIVES), 0);
    assert_eq!(receive(1).await, 0, "the one message is in flight");
    assert_eq!(store.counter.get(EMPTY_RECEIVES), 1);
    assert_eq!(store.counter.get("sqs"), 2);
}
