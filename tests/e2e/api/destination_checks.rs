//! What a destination's registration checks against the platform and the
//! caller: a Meta token against its pixel, Google's refresh token traded
//! first, a dashboard's ownership, the live-destination cap, and the cap
//! on all a site keeps, archived ones included.

use adtrail_tests::*;
use serde_json::json;

use super::destinations::{google, stored, tiktok};
use super::{code, message};

#[tokio::test]
async fn a_meta_destination_is_checked_against_its_pixel_before_it_is_stored() {
    use adtrail_fake_meta::LOJA_PIXEL;
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let body = |pixel: &str| {
        Some(json!({"platform": "meta", "pixelId": pixel, "credentials": {"accessToken": TOKEN}}))
    };
    let b = h
        .expect(
            201,
            "PUT",
            "/v1/sites/loja-x/destinations/meta-second",
            body(LOJA_PIXEL.0),
        )
        .await;
    assert_eq!(b["destination"]["pixelId"], LOJA_PIXEL.0);
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/destinations/meta-third",
            body("999999999"),
        )
        .await;
    assert_eq!((s, code(&b)), (404, "NOT_FOUND"), "{b}");
    assert!(stored(&h, "meta-third").await.is_none());
}

#[tokio::test]
async fn a_dashboard_registers_its_own_destinations_and_leaves_others_alone() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let keys = &h.app.local.keys;
    let dash = keys.sign(json!({"sub": "u9", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let reader = keys.sign(json!({"sub": "u8", "scope": "adtrail:read", "sites": ["loja-x"]}));
    let path = "/v1/sites/loja-x/destinations/tiktok-br";
    // The host's destination: a dashboard may not replace or archive it.
    h.expect(201, "PUT", path, Some(tiktok())).await;
    let (s, b) = h
        .call_as(Some(&dash), "PUT", path, Some(tiktok().to_string()))
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h.call_as(Some(&dash), "DELETE", path, None).await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    // Its own it may; a reader may only read; another site is forbidden.
    let own = "/v1/sites/loja-x/destinations/dash-tiktok";
    let (s, b) = h
        .call_as(Some(&dash), "PUT", own, Some(tiktok().to_string()))
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = h
        .call_as(Some(&reader), "PUT", own, Some(tiktok().to_string()))
        .await;
    assert_eq!((s, code(&b)), (403, "FORBIDDEN"), "{b}");
    let (s, b) = h
        .call_as(Some(&reader), "GET", "/v1/sites/loja-x/destinations", None)
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["destinations"].as_array().unwrap().len(), 2);
    let (s, _) = h
        .call_as(
            Some(&reader),
            "GET",
            "/v1/sites/pet-mania/destinations",
            None,
        )
        .await;
    assert_eq!(s, 403);
    let (s, b) = h.call_as(Some(&dash), "DELETE", own, None).await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test]
async fn a_site_has_at_most_twenty_live_destinations() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    for i in 0..20 {
        h.expect(
            201,
            "PUT",
            &format!("/v1/sites/loja-x/destinations/d{i}"),
            Some(tiktok()),
        )
        .await;
    }
    let (s, b) = h
        .call("PUT", "/v1/sites/loja-x/destinations/d20", Some(tiktok()))
        .await;
    assert_eq!((s, code(&b)), (409, "LIMIT_EXCEEDED"), "{b}");
    // An archived one frees its place (its slug stays taken).
    h.expect(200, "DELETE", "/v1/sites/loja-x/destinations/d0", None)
        .await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/d20",
        Some(tiktok()),
    )
    .await;
}

/// Archived destinations stay (their slugs and history), and every lead
/// change reads them all to find the live ones: a site keeps at most 200.
#[tokio::test]
async fn a_site_keeps_at_most_two_hundred_destinations_archived_ones_included() {
    use adtrail_domain::destinations::MAX_DESTINATIONS;
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/live",
        Some(tiktok()),
    )
    .await;
    // The rest archived, as the API leaves an archived destination.
    let live = stored(&h, "live").await.unwrap();
    for i in 1..MAX_DESTINATIONS {
        let mut old = live.clone();
        old.slug = format!("old-{i:03}");
        old.sealed_credentials = vec![];
        old.archived_at = Some(h.now());
        let destinations = h.store().destinations();
        let put = destinations.put_destination(&old, None).await;
        assert!(put.unwrap(), "old-{i:03} written");
    }
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/destinations/one-more",
            Some(tiktok()),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "LIMIT_EXCEEDED"), "{b}");
    assert!(message(&b).starts_with("slug: "), "{b}");
    assert!(message(&b).contains("archived ones included"), "{b}");
    assert!(stored(&h, "one-more").await.is_none());
    // All of them listed; the live one is still replaced in place.
    let list = h
        .expect(200, "GET", "/v1/sites/loja-x/destinations", None)
        .await;
    assert_eq!(
        list["destinations"].as_array().unwrap().len(),
        MAX_DESTINATIONS
    );
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/destinations/live",
        Some(tiktok()),
    )
    .await;
}

#[tokio::test]
async fn google_credentials_are_traded_for_an_access_token_before_they_are_stored() {
    use adtrail_fake_platforms::{GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET};
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let mut body = google();
    body["credentials"] = json!({"clientId": GOOGLE_CLIENT_ID, "clientSecret": GOOGLE_CLIENT_SECRET,
        "refreshToken": "1//not-a-live-refresh-token"});
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/destinations/google-ads",
            Some(body.clone()),
        )
        .await;
    assert_eq!((s, code(&b)), (422, "PLATFORM_CREDENTIALS_REFUSED"), "{b}");
    assert!(!b.to_string().contains("not-a-live-refresh-token"));
    assert!(stored(&h, "google-ads").await.is_none());
    body["credentials"]["refreshToken"] = json!(adtrail_fake_platforms::GOOGLE_REFRESH_TOKEN);
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/google-ads",
        Some(body),
    )
    .await;
}
