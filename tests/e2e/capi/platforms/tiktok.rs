//! TikTok: its payload and hashes, an invalid event isolated by
//! splitting, a refused token stopping the destination.
use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_platforms::TIKTOK_TOKEN;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::super::drain;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiktok_gets_its_own_payload_and_hashes_in_one_request() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    let now = h.now();
    let b = post(&h, vec![purchase("o-1", now), purchase("o-2", now)]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta", "tiktok-br"]));
    drain(&h).await;
    let taken = h.platforms().accepted();
    assert_eq!(taken.len(), 2);
    assert_eq!(h.platforms().requests(), 1, "both events in one request");
    let e = taken.iter().find(|a| a.event_id == "o-1").unwrap();
    assert_eq!(
        (e.account.as_str(), e.test.as_deref()),
        ("C4LOJAX01", Some("TEST9"))
    );
    assert_eq!(e.event_name, "Purchase");
    assert_eq!(
        e.event,
        json!({
            "event": "Purchase",
            "event_time": now / 1000,
            "event_id": "o-1",
            "user": {
                "email": sha256_hex("ana.silva@example.com"),
                "phone": sha256_hex("+5511987654321"),
                "external_id": sha256_hex("client-7"),
                "ttclid": "E.C.P.tiktok-click",
                "ip": "203.0.113.9",
                "user_agent": "Mozilla/5.0",
            },
            "properties": {"currency": "BRL", "value": 459.9, "order_id": "order-o-1"},
            "page": {"url": "https://loja-x.example/checkout"},
        }),
        "E.164 with + for the phone, lowercased external id, TikTok's click id only"
    );
    // Meta got the same sale with its own phone hash.
    let meta = h.fake().accepted_events();
    assert_eq!(
        meta[0].user_data["ph"],
        json!([sha256_hex("5511987654321")])
    );
    let all = rows(&h, "loja-x").await;
    assert!(
        all.iter()
            .all(|r| r.status == ConversionStatus::Sent && r.hashes.is_none())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invalid_tiktok_event_is_isolated_and_the_rest_go() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    post_rejecting(&h, 6, "o-3").await;
    let _now = h.now();
    drain(&h).await;
    let mut taken: Vec<String> = h
        .platforms()
        .accepted()
        .into_iter()
        .map(|a| a.event_id)
        .collect();
    taken.sort();
    assert_eq!(taken, ["o-0", "o-1", "o-2", "o-4", "o-5"]);
    let failed: Vec<_> = rows(&h, "loja-x")
        .await
        .into_iter()
        .filter(|r| r.status == ConversionStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].event_id, "o-3");
    assert_eq!(failed[0].destination.as_deref(), Some("tiktok-br"));
    assert!(
        failed[0]
            .last_error
            .as_deref()
            .unwrap()
            .starts_with("PLATFORM_REJECTED: tiktok: ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_tiktok_token_stops_that_destination_only() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    h.platforms().kill_token(TIKTOK_TOKEN);
    let now = h.now();
    post(&h, vec![purchase("o-1", now)]).await;
    drain(&h).await;
    let d = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations/tiktok-br", None)
        .await;
    assert_eq!(d["destination"]["state"], "stopped");
    assert!(
        d["destination"]["lastError"]
            .as_str()
            .unwrap()
            .starts_with("PLATFORM_TOKEN_INVALID")
    );
    let meta = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations/meta", None)
        .await;
    assert_eq!(
        meta["destination"]["state"], "active",
        "the pixel still sends"
    );
    assert_eq!(h.fake().accepted_events().len(), 1);
    // A stopped destination takes nothing new; new credentials restart it.
    let b = post(&h, vec![purchase("o-2", now)]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta"]));
    h.platforms().grant_token("tiktok-token-0002");
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/destinations/tiktok-br",
        Some(json!({
        "platform": "tiktok", "pixelCode": "C4LOJAX01",
        "credentials": {"accessToken": "tiktok-token-0002"}})),
    )
    .await;
    let b = post(&h, vec![purchase("o-3", now)]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta", "tiktok-br"]));
    drain(&h).await;
    let taken = h.platforms().accepted();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].test, None, "the test code was left out this time");
}
