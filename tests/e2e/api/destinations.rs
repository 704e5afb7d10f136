//! Destinations: registered per platform with their own ids, credentials
//! sealed and never answered, a slug that keeps its platform, archive
//! without reuse, the pixel listed as `meta`, and the ownership rules.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message};

pub(super) const TIKTOK_TOKEN: &str = "tiktok-secret-token-0001";
const GOOGLE_SECRET: &str = adtrail_fake_platforms::GOOGLE_CLIENT_SECRET;
const GOOGLE_REFRESH: &str = adtrail_fake_platforms::GOOGLE_REFRESH_TOKEN;

pub(super) fn tiktok() -> Value {
    json!({"platform": "tiktok", "pixelCode": "C4TIKTOK01", "testEventCode": "TEST42",
           "credentials": {"accessToken": TIKTOK_TOKEN}})
}

pub(super) fn google() -> Value {
    json!({"platform": "google", "operatingAccount": "123-456-7890",
           "conversionActions": {"purchase": "555001", "lead": "555002"},
           "credentials": {"clientId": adtrail_fake_platforms::GOOGLE_CLIENT_ID, "clientSecret": GOOGLE_SECRET,
                           "refreshToken": GOOGLE_REFRESH}})
}

/// The destination stored under `slug` at Loja X.
pub(super) async fn stored(
    h: &Harness,
    slug: &str,
) -> Option<adtrail_domain::destinations::Destination> {
    let d = h.store().destinations();
    d.get_destination("loja-x", slug)
        .await
        .expect("the store reads")
}

/// Every registration answers its view; nothing of the credentials.
fn assert_no_secret(body: &Value) {
    let text = body.to_string();
    for secret in [
        TIKTOK_TOKEN,
        GOOGLE_SECRET,
        GOOGLE_REFRESH,
        "accessToken",
        "sealed",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[tokio::test]
async fn a_site_registers_destinations_on_several_platforms_and_lists_them_with_its_pixel() {
    use adtrail_fake_meta::LOJA_PIXEL;
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pixel",
        Some(json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency"})),
    )
    .await;
    tiktok_and_google_registered_without_their_secrets(h).await;
    pinterest_and_snap_then_the_list_with_the_pixel(h).await;
    credentials_open_under_their_site_and_slug_only(h).await;
}

/// TikTok and Google registered: each answer shows its ids, never a secret.
async fn tiktok_and_google_registered_without_their_secrets(h: &Harness) {
    let b = h
        .expect(
            201,
            "PUT",
            "/v1/sites/loja-x/destinations/tiktok-br",
            Some(tiktok()),
        )
        .await;
    assert_no_secret(&b);
    let d = &b["destination"];
    assert_eq!(
        (
            d["platform"].as_str(),
            d["state"].as_str(),
            d["pixelCode"].as_str(),
            d["testMode"].as_bool()
        ),
        (
            Some("tiktok"),
            Some("active"),
            Some("C4TIKTOK01"),
            Some(true)
        )
    );
    let b = h
        .expect(
            201,
            "PUT",
            "/v1/sites/loja-x/destinations/google-ads",
            Some(google()),
        )
        .await;
    assert_no_secret(&b);
    let d = &b["destination"];
    assert_eq!(d["operatingAccount"], "1234567890");
    assert_eq!(d["loginAccount"], "1234567890");
    assert_eq!(
        d["conversionActions"],
        json!({"lead": "555002", "purchase": "555001"})
    );
}

/// Pinterest and Snap, each with its own ids and test mode; the list
/// shows them with the pixel as `meta`, and each reads alone.
async fn pinterest_and_snap_then_the_list_with_the_pixel(h: &Harness) {
    use adtrail_fake_meta::LOJA_PIXEL;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/pins",
        Some(json!({
        "platform": "pinterest", "adAccountId": "549755885175", "testMode": true,
        "credentials": {"accessToken": "pin-token-1"}})),
    )
    .await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/snap",
        Some(json!({
        "platform": "snap", "pixelId": "4A5B8C1D-0E2F-4A6B-8C9D-0E1F2A3B4C5D",
        "credentials": {"accessToken": "snap-token-1"}})),
    )
    .await;
    let b = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations", None)
        .await;
    assert_no_secret(&b);
    let listed: Vec<(&str, &str, &str)> = b["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["slug"].as_str().unwrap(),
                d["platform"].as_str().unwrap(),
                d["via"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("meta", "meta", "pixel"),
            ("google-ads", "google", "destinations"),
            ("pins", "pinterest", "destinations"),
            ("snap", "snap", "destinations"),
            ("tiktok-br", "tiktok", "destinations"),
        ]
    );
    let b = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations/snap", None)
        .await;
    assert_eq!(
        b["destination"]["pixelId"],
        "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d"
    );
    let b = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations/meta", None)
        .await;
    assert_eq!(b["destination"]["pixelId"], LOJA_PIXEL.0);
}

/// The credentials are sealed for this site and slug: they open under
/// that context and no other.
async fn credentials_open_under_their_site_and_slug_only(h: &Harness) {
    let tiktok_br = stored(h, "tiktok-br").await.expect("stored");
    let sealer = h.store().sealer();
    let opened = sealer
        .unseal_destination("loja-x", "tiktok-br", &tiktok_br.sealed_credentials)
        .await
        .unwrap();
    assert!(opened.contains(TIKTOK_TOKEN));
    assert!(
        sealer
            .unseal_destination("loja-x", "pins", &tiktok_br.sealed_credentials)
            .await
            .is_err()
    );
    assert!(
        sealer
            .unseal_destination("pet-mania", "tiktok-br", &tiktok_br.sealed_credentials)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_slug_keeps_its_platform_its_credentials_and_once_archived_its_archive() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let path = "/v1/sites/loja-x/destinations/tiktok-br";
    h.expect(201, "PUT", path, Some(tiktok())).await;
    let before = stored(&h, "tiktok-br").await.expect("stored");
    // Replaced without credentials: the sealed ones stay.
    let b = h
        .expect(
            200,
            "PUT",
            path,
            Some(json!({"platform": "tiktok", "pixelCode": "C4TIKTOK02", "enabled": false})),
        )
        .await;
    assert_eq!(b["destination"]["state"], "disabled");
    let after = stored(&h, "tiktok-br").await.expect("stored");
    assert_eq!(after.credential_version, before.credential_version);
    assert_eq!(after.sealed_credentials, before.sealed_credentials);
    // Another platform under the slug: CONFLICT, nothing changed.
    let (s, b) = h
        .call(
            "PUT",
            path,
            Some(json!({"platform": "snap",
        "pixelId": "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d", "credentials": {"accessToken": "x"}})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    assert!(message(&b).starts_with("platform:"), "{b}");
    let same = stored(&h, "tiktok-br").await.expect("stored");
    assert_eq!(same, after);
    // Archived: the row stays, readable, without credentials; the slug is
    // not registered again.
    let b = h.expect(200, "DELETE", path, None).await;
    assert_eq!(b["archived"], true);
    let b = h.expect(200, "GET", path, None).await;
    assert_eq!(b["destination"]["state"], "archived");
    assert!(b["destination"]["archivedAt"].is_i64());
    let archived = stored(&h, "tiktok-br").await.expect("stored");
    assert!(archived.sealed_credentials.is_empty());
    let (s, b) = h.call("PUT", path, Some(tiktok())).await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h.call("DELETE", path, None).await;
    assert_eq!((s, code(&b)), (404, "NOT_FOUND"), "{b}");
}

/// Registrations each refused for one field, with the field's name (a
/// `:` ends a name that is a prefix of others).
fn bad_bodies() -> Vec<(Value, &'static str)> {
    vec![
        (
            json!({"platform": "bing", "credentials": {"accessToken": "t"}}),
            "platform:",
        ),
        (
            json!({"platform": "tiktok", "credentials": {"accessToken": "t"}}),
            "pixelCode:",
        ),
        (
            json!({"platform": "tiktok", "pixelCode": "C4 X", "credentials": {"accessToken": "t"}}),
            "pixelCode",
        ),
        (
            json!({"platform": "tiktok", "pixelCode": "C4X", "testMode": true, "credentials": {"accessToken": "t"}}),
            "testMode:",
        ),
        (
            json!({"platform": "pinterest", "adAccountId": "1", "testEventCode": null, "credentials": {"accessToken": "t"}}),
            "testEventCode:",
        ),
        (
            json!({"platform": "tiktok", "pixelCode": "C4X"}),
            "credentials:",
        ),
        (
            json!({"platform": "tiktok", "pixelCode": "C4X", "credentials": {"accessToken": "has space"}}),
            "credentials.accessToken",
        ),
        (
            json!({"platform": "google", "operatingAccount": "1234567890", "conversionActions": {"purchase": "1"},
                "credentials": {"accessToken": "t"}}),
            "credentials:",
        ),
        (
            json!({"platform": "google", "operatingAccount": "12345", "conversionActions": {"purchase": "1"},
                "credentials": {"clientId": "a", "clientSecret": "b", "refreshToken": "c"}}),
            "operatingAccount",
        ),
        (
            json!({"platform": "google", "operatingAccount": "1234567890", "conversionActions": {"refund": "1"},
                "credentials": {"clientId": "a", "clientSecret": "b", "refreshToken": "c"}}),
            "conversionActions:",
        ),
        (
            json!({"platform": "google", "operatingAccount": "1234567890", "conversionActions": {},
                "credentials": {"clientId": "a", "clientSecret": "b", "refreshToken": "c"}}),
            "conversionActions:",
        ),
        (
            json!({"platform": "snap", "pixelId": "not-a-uuid", "credentials": {"accessToken": "t"}}),
            "pixelId",
        ),
    ]
}

#[tokio::test]
async fn bad_registrations_name_their_field_and_store_nothing() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let path = "/v1/sites/loja-x/destinations/d1";
    for (body, field) in bad_bodies() {
        let (s, b) = h.call("PUT", path, Some(body.clone())).await;
        assert_eq!((s, code(&b)), (400, "INVALID_ARGUMENT"), "{body}: {b}");
        assert!(
            message(&b).starts_with(field.trim_end_matches(':')),
            "{body}: {b}"
        );
        assert!(!message(&b).contains("has space"), "{b}");
    }
    let (s, b) = h
        .call("PUT", "/v1/sites/loja-x/destinations/meta", Some(tiktok()))
        .await;
    assert_eq!((s, code(&b)), (400, "INVALID_ARGUMENT"), "{b}");
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/destinations/Bad_Slug",
            Some(tiktok()),
        )
        .await;
    assert_eq!(s, 400);
    let (s, _) = h
        .call("PUT", "/v1/sites/nowhere/destinations/d1", Some(tiktok()))
        .await;
    assert_eq!(s, 404);
    assert!(
        h.store()
            .destinations()
            .list_destinations("loja-x")
            .await
            .unwrap()
            .is_empty()
    );
}
