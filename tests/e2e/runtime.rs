//! The functions' real `main`s, run as Lambda runs them (the binaries
//! behind a stand-in Runtime API, `AWS_LAMBDA_LOG_LEVEL=trace`, JSON
//! logs), through a scenario that carries every secret adtrail holds: a
//! pasted connection token, a pixel's own token, a login code and the Meta
//! app's secret, the host's bearer JWT, contact hashes and a plain phone
//! sent by mistake. Nothing the processes write may hold any of them; what
//! they write holds their metrics, in CloudWatch's Embedded Metric Format.

use adtrail_domain::time::{Clock, SystemClock};

use adtrail_local::http::api_gateway_event;
use adtrail_tests::runtime::{Function, binary};

use crate::leadads::webhook::call_metas_webhook;
use adtrail_tests::*;
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use serde_json::{Value, json};

mod carried;

use carried::{PIXEL_TOKEN, carried, host_calls, secrets_of};

/// An API Gateway event as the host's server causes it: the bearer JWT in
/// its headers, the verified claims beside.
pub(crate) fn api_event(h: &Harness, method: &str, path: &str, body: Option<Value>) -> Value {
    let token = h.app.host_token();
    let claims = h.app.local.keys.verify(&token).expect("claims");
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
    );
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    api_gateway_event(
        &Method::from_bytes(method.as_bytes()).unwrap(),
        &path.parse::<Uri>().unwrap(),
        &headers,
        body.as_bytes(),
        Some(&claims),
    )
}

/// The queue's messages as Lambda's event source mapping hands them.
pub(crate) async fn sqs_event(h: &Harness, url: &str) -> Option<Value> {
    let got = h
        .store()
        .sqs
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    if got.is_empty() {
        return None;
    }
    let records: Vec<Value> = got
        .iter()
        .map(|m| {
            json!({
                "messageId": m.message_id,
                "receiptHandle": m.receipt_handle,
                "body": m.body,
                "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "local", "ApproximateFirstReceiveTimestamp": "0"},
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:local",
                "awsRegion": "us-east-1",
            })
        })
        .collect();
    Some(json!({ "Records": records }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_mains_at_trace_log_no_secret() {
    // The mains run on the wall clock: so does the stack here.
    let h = Harness::start_at(SystemClock.now_ms()).await;
    let env = adtrail_tests::runtime::stack_env(&h);
    let api = Function::start(binary("adtrail-api"), &env).await;
    let dispatcher = Function::start(binary("adtrail-dispatcher"), &env).await;
    let worker = Function::start(binary("adtrail-sync-worker"), &env).await;
    let sender = Function::start(binary("adtrail-capi-sender"), &env).await;
    let leadgen = Function::start(binary("adtrail-leadgen-worker"), &env).await;
    // TikTok and Snap (its token in the query) take the events; Pinterest
    // refuses its token: both paths are searched for secrets.
    h.platforms().grant_token("tiktok-runtime-secret");
    h.platforms().grant_token("snap-runtime-secret");
    h.platforms().grant_google(
        "google-runtime-client",
        "google-runtime-secret",
        "google-runtime-refresh",
    );
    let carried = carried(&h);
    let mut answers = vec![];
    for (method, path, body) in host_calls(&carried, SystemClock.now_ms()) {
        let path = path.as_str();
        let answer = api
            .invoke(api_event(&h, method, path, Some(body)))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = answer["statusCode"].as_i64().unwrap_or(0);
        assert!(status < 300, "{method} {path}: {answer}");
        answers.push(answer);
    }
    answers.push(
        api.invoke(api_event(&h, "GET", "/v1/meta/connections/agency", None))
            .await
            .unwrap(),
    );
    // With Lead Ads on, the connect listed the owner's Pages and sealed
    // their tokens.
    assert_eq!(
        h.store().pages().list_pages("agency").await.unwrap().len(),
        adtrail_fake_meta::SAMPLE_PAGES.len()
    );
    // Meta's webhook, outside the authorizer: its verification, and a
    // delivery signed with the app secret.
    let (webhook_answers, signature) = call_metas_webhook(&api).await;
    answers.extend(webhook_answers);
    // A form lead on Loja X's linked Page, through the real leadgen worker.
    let (lead_answers, form_answers) = crate::leadads::form_lead_through(&h, &api, &leadgen).await;
    answers.extend(lead_answers);

    sync_and_send(&h, &dispatcher, &worker, &sender, &mut answers).await;
    let jwt = h.app.host_token();
    let mut written = String::new();
    for f in [api, dispatcher, worker, sender, leadgen] {
        written.push_str(&f.stop().await);
        written.push('\n');
    }
    let secrets = secrets_of(&carried, &jwt, signature, form_answers);
    no_secret_is_written(
        &written,
        &serde_json::to_string(&answers).unwrap(),
        &secrets,
    );
}

/// The schedule fires the dispatcher; the worker runs what it queued; the
/// sender sends the leads' events with the pixel's own token.
async fn sync_and_send(
    h: &Harness,
    dispatcher: &Function,
    worker: &Function,
    sender: &Function,
    answers: &mut Vec<Value>,
) {
    let schedule: Value =
        serde_json::from_str(include_str!("../../infra/events/dispatcher-schedule.json")).unwrap();
    dispatcher.invoke(schedule.clone()).await.expect("dispatch");
    // A second tick finds nothing due (the lease moved the next sync on):
    // it logs nothing at INFO (telemetry.rs checks).
    dispatcher.invoke(schedule).await.expect("an idle tick");
    let mut synced = 0;
    while let Some(event) = sqs_event(h, &h.store().names.sync_queue_url).await {
        answers.push(worker.invoke(event).await.expect("sync"));
        synced += 1;
    }
    assert!(synced > 0, "the dispatcher queued the linked account");
    // The sender sends the lead's events with the pixel's own token.
    let mut sends = 0;
    while let Some(event) = sqs_event(h, &h.store().names.send_queue_url).await {
        answers.push(sender.invoke(event).await.expect("send"));
        sends += 1;
    }
    assert!(sends > 0);
    // The Lead went; the Schedule had only a plain phone, which is never
    // sent (nor kept).
    assert_eq!(
        h.fake().accepted_events().len(),
        4,
        "the Lead, the posted purchase and the second lead's Lead and Schedule reached Meta"
    );
    assert_eq!(
        h.platforms().accepted().len(),
        8,
        "the posted purchase reached TikTok, Snap and both Google destinations; the second lead's Lead and Schedule TikTok and Snap"
    );
    assert!(
        h.fake()
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/events"))
            .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {PIXEL_TOKEN}"))),
        "sent with the pixel's own token"
    );
}

/// What the processes wrote holds their metrics and log lines at TRACE,
/// and no secret, as no answer does.
fn no_secret_is_written(written: &str, answers: &str, secrets: &[(&str, String)]) {
    crate::telemetry::the_metrics_are_embedded_documents_with_ids_as_properties(written);
    crate::telemetry::every_log_line_says_when_where_and_in_which_request(written);
    // The search looks where the logs are: the runtime's JSON lines at
    // TRACE from every process, the sender's own summary among them.
    assert!(
        written.contains("\"level\":\"TRACE\""),
        "TRACE lines were written"
    );
    assert!(
        written.contains("send batch done"),
        "the sender's log is searched"
    );
    assert!(
        written.contains("leadgen batch"),
        "the leadgen worker's log is searched"
    );
    for (what, secret) in secrets {
        assert!(
            !written.contains(secret.as_str()),
            "{what} is in a log line"
        );
        assert!(!answers.contains(secret.as_str()), "{what} is in an answer");
    }
}
