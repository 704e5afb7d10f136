//! Google's Data Manager: its payload through conversion actions, the
//! cached access token, validateOnly, isolation and a revoked refresh
//! token.
use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::contact::sha256_hex;
use adtrail_fake_platforms::{GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_REFRESH_TOKEN};
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::super::drain;
use super::*;

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
    post_rejecting(&h, 4, "o-2").await;
    let _now = h.now();
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
async fn a_google_service_account_signs_for_its_access_token() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    let key = h.platforms().google_service_account();
    let register = |credentials: serde_json::Value| {
        json!({"platform": "google", "operatingAccount": "1234567890",
               "conversionActions": {"purchase": "555001"}, "credentials": credentials})
    };
    let path = "/v1/sites/loja-x/destinations/google-sa";
    // A PEM that holds no RSA key, and a key Google does not know: nothing
    // is stored.
    let not_a_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----";
    let (s, b) = h
        .call(
            "PUT",
            path,
            Some(register(
                json!({"clientEmail": key.client_email, "privateKey": not_a_key}),
            )),
        )
        .await;
    assert_eq!(s, 400, "{b}");
    assert!(
        b["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("credentials.privateKey:")
    );
    let stranger = adtrail_fake_platforms::ServiceAccountKey::generate(&key.client_email);
    let (s, b) = h
        .call(
            "PUT",
            path,
            Some(register(
                json!({"clientEmail": key.client_email, "privateKey": stranger.private_key}),
            )),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (422, Some("PLATFORM_CREDENTIALS_REFUSED")),
        "{b}"
    );
    // The account's own key: checked by a signed assertion, then used.
    let listed = h
        .expect(
            201,
            "PUT",
            path,
            Some(register(
                json!({"clientEmail": key.client_email, "privateKey": key.private_key}),
            )),
        )
        .await;
    assert!(!listed.to_string().contains("PRIVATE KEY"));
    let grants = h.platforms().token_grants();
    let now = h.now();
    post(&h, vec![purchase("o-1", now), purchase("o-2", now)]).await;
    drain(&h).await;
    let google = taken_ids(&h);
    assert_eq!(google, ["o-1", "o-2"]);
    assert_eq!(
        h.platforms().token_grants(),
        grants + 1,
        "one access token for the sends"
    );
}
