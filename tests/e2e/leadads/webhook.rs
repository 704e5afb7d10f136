//! Meta's webhook through the local API Gateway, outside the authorizer:
//! the verification handshake, deliveries signed with the app secret over
//! their exact bytes (anything else is 401 and queues nothing), one
//! message per form lead on the leadgen queue (a delivery the queue
//! refuses is 503, for Meta to deliver again), and Lead Ads off.
use adtrail_fake_meta::{FAKE_APP_SECRET, FAKE_WEBHOOK_VERIFY_TOKEN};
use adtrail_local::http::api_gateway_event;
use adtrail_store::queue::LeadgenMessage;
use adtrail_tests::queues::take_all;
use adtrail_tests::runtime::Function;
use adtrail_tests::*;
use aws_lc_rs::hmac;
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use serde_json::{Value, json};

/// `sha256=<hex>` of `body` under `secret`, as Meta signs.
fn sign(secret: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// Every message on the leadgen queue, taken off it.
async fn drain_leadgen(h: &Harness) -> Vec<LeadgenMessage> {
    let url = h.store().names.leadgen_queue_url.clone();
    let bodies = take_all(h.store(), &url.expect("the leadgen queue")).await;
    bodies
        .iter()
        .map(|b| serde_json::from_str(b).expect("a leadgen message"))
        .collect()
}

fn delivery() -> Value {
    json!({"object": "page", "entry": [
        {"id": "100200300", "time": 1_764_547_200, "changes": [
            {"field": "leadgen", "value": {"leadgen_id": 444_000_000_000_001_u64,
                "page_id": 100_200_300, "form_id": "555001", "ad_id": "120000000000000001",
                "adgroup_id": "120000000000000002", "created_time": 1_764_547_100}},
            {"field": "leadgen", "value": {"leadgen_id": "444000000000002",
                "page_id": "100200300", "form_id": "555001", "created_time": 1_764_547_150}},
        ]},
        {"id": "900800700", "time": 1_764_547_200, "changes": [
            {"field": "leadgen", "value": {"leadgen_id": "444000000000003",
                "page_id": "900800700", "form_id": "555009", "created_time": 1_764_547_160}},
            {"field": "feed", "value": {"item": "status"}},
        ]},
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_verifies_the_callback_with_the_verify_token() {
    let h = Harness::start().await;
    let path = |token: &str| {
        format!(
            "/v1/webhooks/meta?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444"
        )
    };
    let (s, kind, body) = h
        .call_raw("GET", &path(FAKE_WEBHOOK_VERIFY_TOKEN), &[], vec![])
        .await;
    assert_eq!(
        (s, kind.as_str(), body.as_str()),
        (200, "text/plain", "1158201444")
    );
    let (s, _, body) = h.call_raw("GET", &path("guess"), &[], vec![]).await;
    assert_eq!(s, 403, "{body}");
    assert!(!body.contains(FAKE_WEBHOOK_VERIFY_TOKEN));
    let (s, _, _) = h
        .call_raw(
            "GET",
            &format!(
                "/v1/webhooks/meta?hub.mode=unsubscribe&hub.verify_token={FAKE_WEBHOOK_VERIFY_TOKEN}&hub.challenge=1"
            ),
            &[],
            vec![],
        )
        .await;
    assert_eq!(s, 403, "only a subscription is verified");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_delivery_puts_each_form_lead_on_the_queue() {
    let started = Harness::start().await;
    let h = &started;
    let bytes = serde_json::to_vec_pretty(&delivery()).unwrap();
    let good = sign(FAKE_APP_SECRET, &bytes);
    unsigned_or_missigned_deliveries_queue_nothing(h, &bytes, &good).await;
    a_delivery_the_queue_refuses_is_delivered_again(h, &bytes, &good).await;
    metas_signed_delivery_queues_each_lead(h, bytes, &good).await;
    an_empty_signed_delivery_queues_nothing(h).await;
}

/// Refused before anything is read: no header, a wrong one, the same JSON
/// serialised again (other bytes), another secret.
async fn unsigned_or_missigned_deliveries_queue_nothing(h: &Harness, bytes: &[u8], good: &str) {
    let compact = serde_json::to_vec(&delivery()).unwrap();
    let other = sign("another-secret", bytes);
    for (headers, body, why) in [
        (vec![], bytes.to_vec(), "no signature"),
        (
            vec![("x-hub-signature-256", "sha256=00")],
            bytes.to_vec(),
            "malformed",
        ),
        (
            vec![("x-hub-signature-256", good)],
            compact,
            "re-serialised",
        ),
        (
            vec![("x-hub-signature-256", other.as_str())],
            bytes.to_vec(),
            "another secret",
        ),
    ] {
        let (s, _, body) = h
            .call_raw("POST", "/v1/webhooks/meta", &headers, body)
            .await;
        assert_eq!(s, 401, "{why}: {body}");
        assert!(body.contains("UNAUTHENTICATED"), "{body}");
    }
    assert!(drain_leadgen(h).await.is_empty(), "nothing queued");
}

/// SQS failing every entry of every batch, each time the store sends
/// them again: the delivery is answered `503`, so Meta delivers it again
/// (the next step), and nothing of it is queued.
async fn a_delivery_the_queue_refuses_is_delivered_again(h: &Harness, bytes: &[u8], good: &str) {
    let faults = &h.runner().stack.cloud.faults;
    let share = faults.batch_share();
    faults.set_batch_share(1.0);
    let (s, _, body) = h
        .call_raw(
            "POST",
            "/v1/webhooks/meta",
            &[("x-hub-signature-256", good)],
            bytes.to_vec(),
        )
        .await;
    faults.set_batch_share(share);
    assert_eq!(s, 503, "{body}");
    assert!(body.contains("STORE_UNAVAILABLE"), "{body}");
    assert!(drain_leadgen(h).await.is_empty(), "nothing queued");
}

/// Meta's own delivery, with a bearer token or without: the signature is
/// what opens the route; each lead is queued with its ids as text.
async fn metas_signed_delivery_queues_each_lead(h: &Harness, bytes: Vec<u8>, good: &str) {
    let (s, _, body) = h
        .call_raw(
            "POST",
            "/v1/webhooks/meta",
            &[("x-hub-signature-256", good)],
            bytes,
        )
        .await;
    assert_eq!((s, body.as_str()), (200, r#"{"received":3}"#));
    let mut queued = drain_leadgen(h).await;
    queued.sort_by(|a, b| a.leadgen_id.cmp(&b.leadgen_id));
    assert_eq!(
        queued,
        vec![
            LeadgenMessage {
                page_id: "100200300".into(),
                leadgen_id: "444000000000001".into(),
                form_id: Some("555001".into()),
                ad_id: Some("120000000000000001".into()),
                adgroup_id: Some("120000000000000002".into()),
                created_time: Some(1_764_547_100),
                via: "webhook".into(),
            },
            LeadgenMessage {
                page_id: "100200300".into(),
                leadgen_id: "444000000000002".into(),
                form_id: Some("555001".into()),
                ad_id: None,
                adgroup_id: None,
                created_time: Some(1_764_547_150),
                via: "webhook".into(),
            },
            LeadgenMessage {
                page_id: "900800700".into(),
                leadgen_id: "444000000000003".into(),
                form_id: Some("555009".into()),
                ad_id: None,
                adgroup_id: None,
                created_time: Some(1_764_547_160),
                via: "webhook".into(),
            },
        ],
        "ids as text, numbers or strings; the feed change left out"
    );
}

/// A signed delivery with no lead in it is taken, and queues nothing.
async fn an_empty_signed_delivery_queues_nothing(h: &Harness) {
    let empty = br#"{"object":"page","entry":[]}"#.to_vec();
    let sig = sign(FAKE_APP_SECRET, &empty);
    let (s, _, body) = h
        .call_raw(
            "POST",
            "/v1/webhooks/meta",
            &[("x-hub-signature-256", sig.as_str())],
            empty,
        )
        .await;
    assert_eq!((s, body.as_str()), (200, r#"{"received":0}"#));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lead_ads_off_every_lead_ads_route_answers_503() {
    let h = Harness::start().await;
    let api = adtrail_api::Api {
        lead_ads: false,
        ..h.runner().api.clone()
    };
    for (method, path) in [
        (
            "GET",
            "/v1/webhooks/meta?hub.mode=subscribe&hub.verify_token=x&hub.challenge=1",
        ),
        ("POST", "/v1/webhooks/meta"),
        ("GET", "/v1/meta/connections/agency/pages"),
        ("GET", "/v1/sites/loja-x/pages/100200300/forms"),
        ("GET", "/v1/sites/loja-x/forms/700800900100/rules"),
        ("GET", "/v1/sites/loja-x/form-leads"),
        ("GET", "/v1/sites/loja-x/form-leads/900000000000001"),
        ("GET", "/v1/reports/forms?siteIds=loja-x&from=0&to=0"),
    ] {
        let (s, body) = call_handler(&api, method, path, b"{}").await;
        assert_eq!(
            (s, body["error"]["code"].as_str()),
            (503, Some("LEAD_ADS_OFF")),
            "{method}"
        );
    }
}

/// Meta's two calls to the webhook, through the real API main: the
/// verification and a delivery signed with the app secret. Answers the
/// answers and the delivery's signature (a secret the logs must not hold).
pub(crate) async fn call_metas_webhook(api: &Function) -> (Vec<Value>, String) {
    let verify = api_gateway_event(
        &Method::GET,
        &format!(
            "/v1/webhooks/meta?hub.mode=subscribe&hub.verify_token={FAKE_WEBHOOK_VERIFY_TOKEN}&hub.challenge=4242"
        )
        .parse::<Uri>()
        .unwrap(),
        &HeaderMap::new(),
        b"",
        None,
    );
    let verified = api.invoke(verify).await.unwrap();
    assert_eq!(verified["statusCode"].as_i64(), Some(200), "{verified}");
    let delivery = json!({"object": "page", "entry": [{"id": "100200300", "changes": [
        {"field": "leadgen", "value": {"leadgen_id": "444000000000009", "page_id": "100200300"}}]}]})
    .to_string();
    let signature = sign(FAKE_APP_SECRET, delivery.as_bytes());
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-hub-signature-256",
        HeaderValue::from_str(&signature).unwrap(),
    );
    let delivered = api
        .invoke(api_gateway_event(
            &Method::POST,
            &"/v1/webhooks/meta".parse::<Uri>().unwrap(),
            &headers,
            delivery.as_bytes(),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(delivered["statusCode"].as_i64(), Some(200), "{delivered}");
    let hex = signature.trim_start_matches("sha256=").to_owned();
    (vec![verified, delivered], hex)
}
