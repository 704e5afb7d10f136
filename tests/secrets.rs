//! Secrets never leave: the production log subscriber (lambda_runtime's,
//! JSON, at TRACE) is captured for a whole scenario, with every API answer
//! and every event put on the bus, and searched for the Meta tokens, raw and
//! URL-encoded. A control line that plants the token must be found, so the
//! search is proven to look where the logs go.

use std::io::Write;
use std::sync::{Arc, Mutex};

use adtrail_fake_meta::{Knobs, Throttle};
use adtrail_tests::*;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber_writer::MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

mod tracing_subscriber_writer {
    pub use lambda_runtime::tracing::subscriber::fmt::MakeWriter;
}

fn encoded(token: &str) -> String {
    url::form_urlencoded::byte_serialize(token.as_bytes()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_appears_in_any_log_line_answer_or_event() {
    // SAFETY: set before any thread of this test process reads them.
    unsafe {
        std::env::set_var("AWS_LAMBDA_LOG_LEVEL", "trace");
        std::env::set_var("AWS_LAMBDA_LOG_FORMAT", "json");
    }
    let logs = Capture::default();
    lambda_runtime::tracing::init_default_subscriber_with_writer(logs.clone());

    let h = Harness::start().await;
    // Tap the bus: a rule sends every adtrail event to a queue we read.
    let aws = h.aws();
    let tap = aws
        .sqs
        .create_queue()
        .queue_name(format!("{}-tap", aws.names.bus))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let tap_arn = aws
        .sqs
        .get_queue_attributes()
        .queue_url(&tap)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    aws.events
        .put_rule()
        .name("tap")
        .event_bus_name(&aws.names.bus)
        .event_pattern(r#"{"source":["adtrail"]}"#)
        .send()
        .await
        .unwrap();
    aws.events
        .put_targets()
        .rule("tap")
        .event_bus_name(&aws.names.bus)
        .targets(
            aws_sdk_eventbridge::types::Target::builder()
                .id("q")
                .arn(tap_arn)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();

    let mut answers: Vec<Value> = vec![];
    let refused = "EAAB-invalid-refused-token-42";
    let second = "EAAB-second-agency-token-0003";
    h.link_agency().await;
    answers.push(
        h.call(
            "PUT",
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": refused})),
        )
        .await
        .1,
    );
    h.sync_until_live(10).await;
    // A throttle (AccountSyncFailed), a token dying (ConnectionTokenInvalid), a new token.
    h.fake().set_knobs(Knobs {
        throttle: Some(Throttle {
            code: 4,
            remaining: 1,
            regain_minutes: 61,
            only_path: None,
        }),
        ..Knobs::default()
    });
    h.runner().advance(45 * 60_000).await.unwrap();
    h.runner().tick().await.unwrap();
    h.fake().kill_token(TOKEN);
    h.runner().advance(3 * 3_600_000).await.unwrap();
    h.runner().tick().await.unwrap();
    answers.push(h.connect(second).await);
    h.runner().tick().await.unwrap();
    for path in [
        "/v1/meta/connections/agency",
        "/v1/meta/status?siteIds=loja-x,pet-mania",
    ] {
        answers.push(h.call("GET", path, None).await.1);
    }
    let day = T0 - T0 % 86_400_000;
    answers.push(
        h.call(
            "GET",
            &format!(
                "/v1/sites/loja-x/spend?from={}&to={day}",
                day - 29 * 86_400_000
            ),
            None,
        )
        .await
        .1,
    );

    let mut events = vec![];
    loop {
        let out = aws
            .sqs
            .receive_message()
            .queue_url(&tap)
            .max_number_of_messages(10)
            .send()
            .await
            .unwrap();
        let batch = out.messages.unwrap_or_default();
        if batch.is_empty() {
            break;
        }
        for m in batch {
            events.push(m.body.unwrap_or_default());
            aws.sqs
                .delete_message()
                .queue_url(&tap)
                .receipt_handle(m.receipt_handle.unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    let kinds: Vec<String> = events
        .iter()
        .filter_map(|e| {
            serde_json::from_str::<Value>(e).ok()?["detail-type"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(kinds.iter().any(|k| k == "AccountSyncFailed"), "{kinds:?}");
    assert!(
        kinds.iter().any(|k| k == "ConnectionTokenInvalid"),
        "{kinds:?}"
    );

    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        log_text.len() > 10_000,
        "the capture saw the run's logs ({} bytes)",
        log_text.len()
    );
    let answers_text = serde_json::to_string(&answers).unwrap();
    let events_text = events.join("\n");
    for token in [TOKEN, refused, second] {
        for needle in [token.to_owned(), encoded(token)] {
            assert!(!log_text.contains(&needle), "a log line carries {needle}");
            assert!(
                !answers_text.contains(&needle),
                "an answer carries {needle}"
            );
            assert!(!events_text.contains(&needle), "an event carries {needle}");
        }
    }

    // The control: a token planted in a log line is found where we looked.
    tracing::warn!(planted = TOKEN, "control line");
    let log_text = String::from_utf8_lossy(&logs.0.lock().unwrap()).into_owned();
    assert!(
        log_text.contains(TOKEN),
        "the search would have found a leak"
    );
}
