//! Pinterest and Snap: their payloads, Pinterest's per-event answer,
//! Snap's isolation by splitting, a refused credential on every platform.
use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_platforms::TIKTOK_TOKEN;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::super::drain;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinterest_and_snap_get_their_own_payloads() {
    let h = Harness::start().await;
    with_pinterest_and_snap(&h, true).await;
    let now = h.now();
    let mut sale = purchase("o-1", now);
    sale["contact"]["epik"] = json!("pin-click-1");
    sale["contact"]["scClickId"] = json!("snap-click-1");
    let b = post(&h, vec![sale]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta", "pins", "snap"]));
    drain(&h).await;
    let taken = h.platforms().accepted();
    let pin = taken
        .iter()
        .find(|a| a.platform == "pinterest")
        .expect("Pinterest got it");
    assert_eq!(
        (pin.account.as_str(), pin.test.as_deref()),
        ("549755885175", Some("test=true"))
    );
    assert_eq!(
        pin.event,
        json!({
            "event_name": "checkout",
            "action_source": "web",
            "event_time": now / 1000,
            "event_id": "o-1",
            "event_source_url": "https://loja-x.example/checkout",
            "user_data": {
                "em": [sha256_hex("ana.silva@example.com")],
                "ph": [sha256_hex("5511987654321")],
                "fn": [sha256_hex("ana")],
                "external_id": [sha256_hex("Client-7")],
                "client_ip_address": "203.0.113.9",
                "client_user_agent": "Mozilla/5.0",
                "click_id": "pin-click-1",
            },
            "custom_data": {"currency": "BRL", "value": "459.9", "order_id": "order-o-1"},
        })
    );
    let snap = taken
        .iter()
        .find(|a| a.platform == "snap")
        .expect("Snap got it");
    assert_eq!(
        (snap.account.as_str(), snap.test.as_deref()),
        (SNAP_PIXEL, Some("validate"))
    );
    assert_eq!(snap.event_name, "PURCHASE");
    assert_eq!(snap.event["action_source"], "WEB");
    assert_eq!(
        snap.event["user_data"]["ph"],
        json!([sha256_hex("5511987654321")])
    );
    assert_eq!(snap.event["user_data"]["sc_click_id"], "snap-click-1");
    assert!(snap.event["user_data"].get("click_id").is_none());
    assert_eq!(snap.event["custom_data"]["value"], 459.9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinterest_fails_only_the_events_it_refused_and_snap_isolates_its_invalid_one() {
    let h = Harness::start().await;
    with_pinterest_and_snap(&h, false).await;
    post_rejecting(&h, 5, "o-2").await;
    let _now = h.now();
    let requests_before = h.platforms().requests();
    drain(&h).await;
    let taken = h.platforms().accepted();
    let ids = |platform: &str| {
        let mut ids: Vec<String> = taken
            .iter()
            .filter(|a| a.platform == platform)
            .map(|a| a.event_id.clone())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids("pinterest"), ["o-0", "o-1", "o-3", "o-4"]);
    assert_eq!(ids("snap"), ["o-0", "o-1", "o-3", "o-4"]);
    // Pinterest answered per event in one request: nothing was sent twice.
    let failed: Vec<_> = rows(&h, "loja-x")
        .await
        .into_iter()
        .filter(|r| r.status == ConversionStatus::Failed)
        .collect();
    let mut where_failed: Vec<&str> = failed
        .iter()
        .map(|r| r.destination.as_deref().unwrap())
        .collect();
    where_failed.sort();
    assert_eq!(where_failed, ["pins", "snap"]);
    assert!(failed.iter().all(|r| {
        r.event_id == "o-2"
            && r.last_error
                .as_deref()
                .unwrap()
                .starts_with("PLATFORM_REJECTED")
    }));
    let pin_err = failed
        .iter()
        .find(|r| r.destination.as_deref() == Some("pins"))
        .unwrap();
    assert_eq!(
        pin_err.last_error.as_deref(),
        Some("PLATFORM_REJECTED: pinterest: Invalid user_data parameter.")
    );
    // One Pinterest request; Snap's split to isolate o-2 took more.
    assert!(h.platforms().requests() - requests_before > 2);
    assert_eq!(
        taken.iter().filter(|a| a.platform == "pinterest").count(),
        4,
        "no processed event resent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_credential_stops_its_destination_on_every_platform() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/pins",
        Some(json!({
        "platform": "pinterest", "adAccountId": "549755885175",
        "credentials": {"accessToken": "pinterest-revoked"}})),
    )
    .await;
    h.expect(201, "PUT", "/v1/sites/loja-x/destinations/snap", Some(json!({
        "platform": "snap", "pixelId": SNAP_PIXEL, "credentials": {"accessToken": "snap-revoked"}}))).await;
    h.platforms().kill_token(TIKTOK_TOKEN);
    post(&h, vec![purchase("o-1", h.now())]).await;
    drain(&h).await;
    for slug in ["tiktok-br", "pins", "snap"] {
        let d = h
            .expect(
                200,
                "GET",
                &format!("/v1/sites/loja-x/destinations/{slug}"),
                None,
            )
            .await;
        assert_eq!(d["destination"]["state"], "stopped", "{slug}: {d}");
        let failed = rows(&h, "loja-x")
            .await
            .into_iter()
            .find(|r| r.destination.as_deref() == Some(slug))
            .unwrap();
        assert_eq!(failed.status, ConversionStatus::Failed, "{slug}");
        assert!(
            failed
                .last_error
                .unwrap()
                .starts_with("PLATFORM_TOKEN_INVALID"),
            "{slug}"
        );
    }
    assert_eq!(
        h.fake().accepted_events().len(),
        1,
        "Meta's pixel still sends"
    );
}
