//! The functions' real `main`s, run as Lambda runs them (the binaries
//! behind a stand-in Runtime API, `AWS_LAMBDA_LOG_LEVEL=trace`, JSON
//! logs), through a scenario that carries every secret adtrail holds: a
//! pasted connection token, a pixel's own token, a login code and the Meta
//! app's secret, the host's bearer JWT, contact hashes and a plain phone
//! sent by mistake. Nothing the processes write may hold any of them; what
//! they write holds their metrics, in CloudWatch's Embedded Metric Format.

use adtrail_domain::time::{Clock, SystemClock};
use adtrail_fake_meta::{FAKE_APP_SECRET, FAKE_WEBHOOK_VERIFY_TOKEN, LOJA_PIXEL};
use adtrail_local::http::api_gateway_event;
use adtrail_tests::runtime::{Function, binary};

use crate::leadads::webhook::call_metas_webhook;
use adtrail_tests::*;
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use serde_json::{Value, json};

const PIXEL_TOKEN: &str = "EAAB-loja-own-pixel-token-0009";
const LOGIN_CODE: &str = "sys-code-runtime-7";

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

    let plain_phone = "5511988887777";
    let hashes = [
        adtrail_domain::contact::sha256_hex(plain_phone),
        adtrail_domain::contact::sha256_hex("contact-runtime"),
    ];
    let meta = json!({"ph": [hashes[0]], "externalId": hashes[1]});
    // A storefront's plain contact, and each platform's credentials.
    let contact = json!({"email": "zuleika.runtime@example.com", "phone": "+55 11 97777-6666",
        "firstName": "Zuleika", "ip": "203.0.113.77", "userAgent": "AdtrailRuntimeAgent/9.9",
        "fbc": "fb.1.1554763741205.RuntimeClick", "ttclid": "E.C.P.RuntimeTikTok"});
    let plain = [
        "zuleika.runtime@example.com",
        "97777-6666",
        "5511977776666",
        "Zuleika",
        "203.0.113.77",
        "AdtrailRuntimeAgent/9.9",
        "RuntimeClick",
        "RuntimeTikTok",
    ];
    let contact_hashes = [
        adtrail_domain::contact::sha256_hex("zuleika.runtime@example.com"),
        adtrail_domain::contact::sha256_hex("5511977776666"),
        adtrail_domain::contact::sha256_hex("+5511977776666"),
    ];
    let service_account = h.platforms().google_service_account();
    let credentials = [
        (
            "tiktok",
            json!({"pixelCode": "C4RUNTIME"}),
            json!({"accessToken": "tiktok-runtime-secret"}),
        ),
        (
            "google",
            json!({"operatingAccount": "1234567890", "conversionActions": {"purchase": "42"}}),
            json!({"clientId": "google-runtime-client", "clientSecret": "google-runtime-secret", "refreshToken": "google-runtime-refresh"}),
        ),
        (
            "google",
            json!({"operatingAccount": "1234567890", "conversionActions": {"purchase": "43"}}),
            json!({"clientEmail": service_account.client_email, "privateKey": service_account.private_key}),
        ),
        (
            "pinterest",
            json!({"adAccountId": "549755885175"}),
            json!({"accessToken": "pinterest-runtime-secret"}),
        ),
        (
            "snap",
            json!({"pixelId": "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d"}),
            json!({"accessToken": "snap-runtime-secret"}),
        ),
    ];
    let now = SystemClock.now_ms();
    let mut answers = vec![];
    for (method, path, body) in [
        (
            "PUT",
            "/v1/sites/loja-x",
            json!({"name": "Loja X", "currency": "BRL", "country": "BR"}),
        ),
        (
            "PUT",
            "/v1/meta/connections/agency",
            json!({"accessToken": TOKEN}),
        ),
        (
            "POST",
            "/v1/meta/connections/agency/login",
            json!({"code": LOGIN_CODE, "redirectUri": "https://app.example.com/meta/retorno"}),
        ),
        (
            "PUT",
            &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
            json!({"ownerKey": "agency"}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/pixel",
            json!({"pixelId": LOJA_PIXEL.0, "accessToken": PIXEL_TOKEN}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/pipeline",
            json!({"columns": [{"key": "agendado", "name": "Agendado"}]}),
        ),
        (
            "PUT",
            "/v1/sites/loja-x/event-map",
            json!({"columns": {"agendado": "Schedule"}, "sendLeadEvent": true}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads",
            json!({"leadKey": "ana", "changeId": "r1", "occurredAt": now, "origin": "organic", "meta": meta}),
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            json!({"changeId": "r2", "occurredAt": now, "column": "agendado", "meta": {"ph": [plain_phone]}}),
        ),
    ]
    .into_iter()
    .map(|(m, p, b)| (m, p.to_owned(), b))
    .chain(credentials.iter().enumerate().map(|(i, (platform, ids, creds))| {
        let mut body = ids.clone();
        body["platform"] = json!(platform);
        body["credentials"] = creds.clone();
        ("PUT", format!("/v1/sites/loja-x/destinations/{platform}-{i}"), body)
    }))
    .chain(std::iter::once((
            "POST",
            "/v1/sites/loja-x/events".to_owned(),
            json!({"events": [{"eventId": "order-runtime", "event": "purchase", "occurredAt": now,
                "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
                "valueCents": 1990, "currency": "BRL", "contact": contact}]}),
        )))
    // A lead's change with the same plain contact, fanned out to every
    // destination.
    .chain(std::iter::once((
        "POST",
        "/v1/sites/loja-x/leads".to_owned(),
        json!({"leadKey": "zu", "changeId": "r3", "occurredAt": now, "origin": "organic",
            "column": "agendado", "contact": contact}),
    )))
    .collect::<Vec<_>>()
    {
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

    // The schedule fires the dispatcher; the worker runs what it queued.
    let schedule: Value =
        serde_json::from_str(include_str!("../../infra/events/dispatcher-schedule.json")).unwrap();
    dispatcher.invoke(schedule).await.expect("dispatch");
    let mut synced = 0;
    while let Some(event) = sqs_event(&h, &h.store().names.sync_queue_url).await {
        answers.push(worker.invoke(event).await.expect("sync"));
        synced += 1;
    }
    assert!(synced > 0, "the dispatcher queued the linked account");
    // The sender sends the lead's events with the pixel's own token.
    let mut sends = 0;
    while let Some(event) = sqs_event(&h, &h.store().names.send_queue_url).await {
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

    let jwt = h.app.host_token();
    let mut written = String::new();
    for f in [api, dispatcher, worker, sender, leadgen] {
        written.push_str(&f.stop().await);
        written.push('\n');
    }
    crate::telemetry::the_metrics_are_embedded_documents_with_ids_as_properties(&written);
    crate::telemetry::every_log_line_says_when_where_and_in_which_request(&written);
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
    let answers = serde_json::to_string(&answers).unwrap();
    let secrets = [
        ("the connection token", TOKEN.to_owned()),
        ("the pixel's token", PIXEL_TOKEN.to_owned()),
        ("the login code", LOGIN_CODE.to_owned()),
        ("the app secret", FAKE_APP_SECRET.to_owned()),
        (
            "the webhook's verify token",
            FAKE_WEBHOOK_VERIFY_TOKEN.to_owned(),
        ),
        ("a webhook delivery's signature", signature.clone()),
        (
            "a Page's token",
            adtrail_fake_meta::page_token(adtrail_fake_meta::SAMPLE_PAGES[0].0),
        ),
        ("a contact hash", hashes[0].clone()),
        ("a contact hash", hashes[1].clone()),
        ("the plain phone", plain_phone.to_owned()),
        ("the bearer JWT", jwt.split('.').nth(2).unwrap().to_owned()),
    ]
    .into_iter()
    .chain(
        plain
            .iter()
            .map(|p| ("a plain contact value", (*p).to_owned())),
    )
    .chain(
        form_answers
            .iter()
            .map(|a| ("a form lead's answer", (*a).to_owned())),
    )
    .chain(
        contact_hashes
            .iter()
            .map(|h| ("a posted contact's hash", h.clone())),
    )
    .chain(credentials.iter().flat_map(|(_, _, creds)| {
        creds
            .as_object()
            .unwrap()
            .values()
            .map(|v| ("a destination's credential", v.as_str().unwrap().to_owned()))
            .collect::<Vec<_>>()
    }))
    // A line of the service account's key, should any part of it leak.
    .chain(
        service_account
            .private_key
            .lines()
            .nth(3)
            .map(|line| ("a line of a service account's key", line.to_owned())),
    )
    .collect::<Vec<_>>();
    for (what, secret) in &secrets {
        assert!(
            !written.contains(secret.as_str()),
            "{what} is in a log line"
        );
        assert!(!answers.contains(secret.as_str()), "{what} is in an answer");
    }
}
