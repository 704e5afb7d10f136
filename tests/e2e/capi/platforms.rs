//! The other platforms through the queues: each platform's wire payload,
//! its batch semantics when one event is invalid, a refused credential
//! stopping that destination only, and test modes.

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_platforms::{
    GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_REFRESH_TOKEN, Knobs, PINTEREST_TOKEN,
    SNAP_TOKEN, TIKTOK_TOKEN,
};
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

use super::drain;

async fn post(h: &Harness, events: Vec<Value>) -> Value {
    h.expect(
        202,
        "POST",
        "/v1/sites/loja-x/events",
        Some(json!({"events": events})),
    )
    .await
}

/// Loja X with its pixel and a TikTok destination in test mode.
async fn with_tiktok(h: &Harness) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/tiktok-br",
        Some(json!({
        "platform": "tiktok", "pixelCode": "C4LOJAX01", "testEventCode": "TEST9",
        "credentials": {"accessToken": TIKTOK_TOKEN}})),
    )
    .await;
}

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
    h.platforms().set_knobs(Knobs {
        reject_event_ids: vec!["o-3".into()],
        ..Knobs::default()
    });
    let now = h.now();
    post(
        &h,
        (0..6).map(|i| purchase(&format!("o-{i}"), now)).collect(),
    )
    .await;
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

/// Loja X with Pinterest and Snap destinations (Pinterest in test mode).
async fn with_pinterest_and_snap(h: &Harness, snap_validate: bool) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/pins",
        Some(json!({
        "platform": "pinterest", "adAccountId": "549755885175", "testMode": true,
        "credentials": {"accessToken": PINTEREST_TOKEN}})),
    )
    .await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/snap",
        Some(json!({
        "platform": "snap", "pixelId": SNAP_PIXEL, "testMode": snap_validate,
        "credentials": {"accessToken": SNAP_TOKEN}})),
    )
    .await;
}

const SNAP_PIXEL: &str = "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d";

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
    h.platforms().set_knobs(Knobs {
        reject_event_ids: vec!["o-2".into()],
        ..Knobs::default()
    });
    let now = h.now();
    post(
        &h,
        (0..5).map(|i| purchase(&format!("o-{i}"), now)).collect(),
    )
    .await;
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

/// Loja X with a Google destination: purchases and leads each to their
/// conversion action.
async fn with_google(h: &Harness, validate_only: bool) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/google-ads",
        Some(json!({
        "platform": "google", "operatingAccount": "123-456-7890", "loginAccount": "9876543210",
        "conversionActions": {"purchase": "555001", "lead": "555002"}, "testMode": validate_only,
        "credentials": {"clientId": GOOGLE_CLIENT_ID, "clientSecret": GOOGLE_CLIENT_SECRET,
                        "refreshToken": GOOGLE_REFRESH_TOKEN}})),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_gets_its_events_through_the_data_manager_with_one_cached_access_token() {
    let h = Harness::start().await;
    with_google(&h, false).await;
    let now = h.now();
    let mut sale = purchase("o-1", now);
    sale["contact"]["email"] = json!("John.Smith+shop@Gmail.com");
    sale["contact"]["gclid"] = json!("Cj0KCQ-google-click");
    let mut lead = purchase("l-1", now);
    lead["event"] = json!("lead");
    let mut cart = purchase("c-1", now);
    cart["event"] = json!("add_to_cart");
    // The registration traded the refresh token once, as its check.
    let grants = h.platforms().token_grants();
    let b = post(&h, vec![sale, lead, cart]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta", "google-ads"]));
    assert_eq!(
        b["events"][2]["queued"],
        json!(["meta"]),
        "no conversion action for carts"
    );
    drain(&h).await;
    let google: Vec<_> = h
        .platforms()
        .accepted()
        .into_iter()
        .filter(|a| a.platform == "google")
        .collect();
    assert_eq!(google.len(), 2);
    assert_eq!(
        h.platforms().requests(),
        1,
        "both in one request, two destinations"
    );
    let e = google.iter().find(|a| a.event_id == "o-1").unwrap();
    assert_eq!(e.account, "1234567890");
    assert_eq!(
        e.event,
        json!({
            "destinationReferences": ["purchase"],
            "transactionId": "o-1",
            "eventTimestamp": chrono_utc(now),
            "eventSource": "WEB",
            "userData": {"userIdentifiers": [
                {"emailAddress": sha256_hex("johnsmith@gmail.com")},
                {"phoneNumber": sha256_hex("+5511987654321")},
            ]},
            "adIdentifiers": {"gclid": "Cj0KCQ-google-click"},
            "conversionValue": 459.9,
            "currency": "BRL",
        }),
        "Google's Gmail rule, E.164 with +, e-mail and phone only"
    );
    // A second batch reuses the access token.
    post(&h, vec![purchase("o-2", now)]).await;
    drain(&h).await;
    assert_eq!(
        h.platforms().token_grants() - grants,
        1,
        "the sends minted one access token and reused it"
    );
}

fn chrono_utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn google_validate_only_an_invalid_event_and_a_revoked_refresh_token() {
    let h = Harness::start().await;
    with_google(&h, true).await;
    h.platforms().set_knobs(Knobs {
        reject_event_ids: vec!["o-2".into()],
        ..Knobs::default()
    });
    let now = h.now();
    post(
        &h,
        (0..4).map(|i| purchase(&format!("o-{i}"), now)).collect(),
    )
    .await;
    drain(&h).await;
    let google: Vec<_> = h
        .platforms()
        .accepted()
        .into_iter()
        .filter(|a| a.platform == "google")
        .collect();
    let mut ids: Vec<&str> = google.iter().map(|a| a.event_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["o-0", "o-1", "o-3"], "the invalid event isolated");
    assert!(
        google
            .iter()
            .all(|a| a.test.as_deref() == Some("validateOnly"))
    );
    let failed = rows(&h, "loja-x")
        .await
        .into_iter()
        .find(|r| r.status == ConversionStatus::Failed)
        .unwrap();
    assert_eq!(failed.event_id, "o-2");
    assert!(
        failed
            .last_error
            .unwrap()
            .starts_with("PLATFORM_REJECTED: google: ")
    );
    // Revoked: once the cached access token expires, the next send
    // cannot mint another and the destination stops.
    h.platforms()
        .revoke_google(GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_REFRESH_TOKEN);
    h.runner().advance(3_600_000).await.unwrap();
    let now = h.now();
    post(&h, vec![purchase("o-9", now)]).await;
    drain(&h).await;
    let d = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations/google-ads", None)
        .await;
    assert_eq!(d["destination"]["state"], "stopped", "{d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_destination_has_its_metrics_filtered_history_and_status_from_counters() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    h.platforms().set_knobs(Knobs {
        reject_event_ids: vec!["o-3".into()],
        ..Knobs::default()
    });
    let now = h.now();
    let mut events: Vec<Value> = (0..5).map(|i| purchase(&format!("o-{i}"), now)).collect();
    let mut lead = purchase("l-1", now);
    lead["event"] = json!("lead");
    events.push(lead);
    post(&h, events).await;
    drain(&h).await;
    let day = now - now.rem_euclid(86_400_000);
    let m = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/destinations/tiktok-br/metrics?from={day}&to={day}"),
            None,
        )
        .await;
    assert_eq!(
        m["totals"],
        json!({"queued": 6, "sent": 5, "failed": 1}),
        "{m}"
    );
    assert_eq!(
        m["byEvent"]["purchase"],
        json!({"queued": 5, "sent": 4, "failed": 1})
    );
    assert_eq!(
        m["byEvent"]["lead"],
        json!({"queued": 1, "sent": 1, "failed": 0})
    );
    assert_eq!(
        m["days"],
        json!([{"dayStart": day, "queued": 6, "sent": 5, "failed": 1}])
    );
    let pixel = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/destinations/meta/metrics?from={day}&to={day}"),
            None,
        )
        .await;
    assert_eq!(
        pixel["totals"],
        json!({"queued": 6, "sent": 6, "failed": 0})
    );
    // The history, filtered: TikTok's failed row only.
    let list = h
        .expect(
            200,
            "GET",
            "/v1/sites/loja-x/conversions?destination=tiktok-br&status=failed",
            None,
        )
        .await;
    let rows = list["conversions"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(
        (rows[0]["eventId"].as_str(), rows[0]["destination"].as_str()),
        (Some("o-3"), Some("tiktok-br"))
    );
    let list = h
        .expect(
            200,
            "GET",
            "/v1/sites/loja-x/conversions?destination=meta&limit=4",
            None,
        )
        .await;
    assert_eq!(list["conversions"].as_array().unwrap().len(), 4);
    assert!(
        list["conversions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["destination"] == "meta")
    );
    let next = &list["next"];
    let more = h
        .expect(
            200,
            "GET",
            &format!(
                "/v1/sites/loja-x/conversions?destination=meta&limit=4&before={}&beforeEventId={}",
                next["before"],
                next["beforeEventId"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(
        more["conversions"].as_array().unwrap().len(),
        2,
        "the rest of the pixel's six"
    );
    let (s, _) = h
        .call("GET", "/v1/sites/loja-x/conversions?status=sent", None)
        .await;
    assert_eq!(s, 400);
    // meta.status: each destination's totals.
    let st = h
        .expect(200, "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(
        st["sites"][0]["conversions"]["destinations"],
        json!({"meta": {"pending": 0, "sent": 6, "failed": 0},
               "tiktok-br": {"pending": 0, "sent": 5, "failed": 1}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leads_conversions_are_listed_whatever_their_destination() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    move_to(
        &h,
        "ana",
        "c2",
        json!({"stage": "won", "revenueCents": 1000, "meta": meta_for("ana")}),
    )
    .await;
    drain(&h).await;
    let b = h
        .expect(200, "GET", "/v1/sites/loja-x/leads/ana/conversions", None)
        .await;
    let names: Vec<&str> = b["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{b}");
    assert!(names.contains(&"Schedule") && names.contains(&"Purchase"));
    assert!(
        b["conversions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "sent" && c["destination"] == "meta")
    );
    let (s, _) = h
        .call("GET", "/v1/sites/loja-x/leads/nobody/conversions", None)
        .await;
    assert_eq!(s, 404);
}
