//! A queue read as a test reads it: every message taken off, as SQS hands
//! them out, so that what arrived (and how many times) can be compared.

use adtrail_store::Store;

/// The bodies of every message on the queue at `url`, each deleted once
/// received, in the order received.
///
/// # Panics
/// When SQS does not answer.
pub async fn take_all(store: &Store, url: &str) -> Vec<String> {
    let mut bodies = vec![];
    loop {
        let out = store
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return bodies;
        }
        for m in messages {
            bodies.push(m.body().unwrap_or_default().to_owned());
            let delete = store.sqs.delete_message().queue_url(url);
            let receipt = m.receipt_handle().unwrap_or_default();
            delete.receipt_handle(receipt).send().await.expect("delete");
        }
    }
}
