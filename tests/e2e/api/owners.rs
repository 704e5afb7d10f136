//! Ownership: a dashboard never takes or undoes what another owner made
//! (links, the pixel, the event map), status marks what is its own, and a
//! grant that shrank keeps it off the sites it lost.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message};

/// A JSON body as `call_as` sends it.
fn body(v: Value) -> Option<String> {
    Some(v.to_string())
}

#[tokio::test]
async fn a_dashboard_never_takes_or_undoes_what_another_owner_made() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await; // the host's owner `agency` linked every account
    let keys = &h.app.local.keys;
    let dash = keys.sign(json!({"sub": "u9", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let (s, b) = h
        .call_as(
            Some(&dash),
            "PUT",
            "/v1/meta/connections/me",
            body(json!({"accessToken": TOKEN})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    the_agencys_links_are_not_the_dashboards(h, &dash).await;
    the_agencys_pixel_and_map_are_not_the_dashboards(h, &dash).await;
    status_marks_what_is_the_callers_own(h, &dash).await;
    once_unlinked_the_dashboard_links_it_as_its_own(h, &dash).await;
}

/// Linking or unlinking the agency's link: CONFLICT; the host may, or may
/// ask to be refused the same way.
async fn the_agencys_links_are_not_the_dashboards(h: &Harness, dash: &str) {
    let path = format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}");
    let (s, b) = h
        .call_as(Some(dash), "PUT", &path, body(json!({"ownerKey": "me"})))
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h.call_as(Some(dash), "DELETE", &path, None).await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    assert!(
        h.store()
            .links()
            .get_link("loja-x", LOJA_PRINCIPAL)
            .await
            .unwrap()
            .is_some()
    );
    // The host may, or may ask to be refused the same way.
    let (s, b) = h
        .call(
            "PUT",
            &path,
            Some(json!({"ownerKey": "dashboard:u9", "onlyOwn": true})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h
        .call("DELETE", &format!("{path}?ownerKey=dashboard:u9"), None)
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
}

/// The pixel: the agency sets it; the dashboard may not replace or remove
/// it, nor save the event map.
async fn the_agencys_pixel_and_map_are_not_the_dashboards(h: &Harness, dash: &str) {
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pixel",
        Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
    )
    .await;
    let (s, b) = h
        .call_as(
            Some(dash),
            "PUT",
            "/v1/sites/loja-x/pixel",
            body(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "me"})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h
        .call_as(Some(dash), "DELETE", "/v1/sites/loja-x/pixel", None)
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pipeline",
            Some(json!({"columns": [{"key": "agendado", "name": "Agendado"}]})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, b) = h
        .call_as(
            Some(dash),
            "PUT",
            "/v1/sites/loja-x/event-map",
            body(json!({"columns": {"agendado": "Schedule"}})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
}

/// Status marks what is the caller's own.
async fn status_marks_what_is_the_callers_own(h: &Harness, dash: &str) {
    let (s, status) = h
        .call_as(Some(dash), "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(s, 200, "{status}");
    let site = &status["sites"][0];
    assert_eq!(site["pixel"]["own"], false);
    assert!(
        site["adAccounts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["own"] == false)
    );
    let (_, status) = h
        .call(
            "GET",
            "/v1/meta/status?siteIds=loja-x&ownerKey=agency",
            None,
        )
        .await;
    let site = &status["sites"][0];
    assert_eq!(site["pixel"]["own"], true);
    assert!(
        site["adAccounts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["own"] == true)
    );
}

/// Once the agency unlinks, the dashboard links the account as its own;
/// a dashboard whose grant lost a site its owner feeds may not reconnect
/// the whole owner, and the answer names the site.
async fn once_unlinked_the_dashboard_links_it_as_its_own(h: &Harness, dash: &str) {
    let path = format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}");
    let keys = &h.app.local.keys;
    let (s, _) = h
        .call("DELETE", &format!("{path}?ownerKey=agency"), None)
        .await;
    assert_eq!(s, 200);
    let (s, b) = h
        .call_as(Some(dash), "PUT", &path, body(json!({"ownerKey": "me"})))
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, _) = h.call_as(Some(dash), "DELETE", &path, None).await;
    assert_eq!(s, 200);
    // A dashboard whose grant lost a site its owner feeds may not reconnect
    // the whole owner; the answer names the site.
    let (s, b) = h
        .call_as(Some(dash), "PUT", &path, body(json!({"ownerKey": "me"})))
        .await;
    assert_eq!(s, 201, "{b}");
    let narrower =
        keys.sign(json!({"sub": "u9", "scope": "adtrail:configure", "sites": ["pet-mania"]}));
    let (s, b) = h
        .call_as(
            Some(&narrower),
            "PUT",
            "/v1/meta/connections/me",
            body(json!({"accessToken": TOKEN})),
        )
        .await;
    assert_eq!((s, code(&b)), (403, "FORBIDDEN"), "{b}");
    assert!(message(&b).contains("loja-x"), "{b}");
}

#[tokio::test]
async fn a_dashboard_whose_grant_shrank_cannot_touch_its_pixel_outside_it() {
    use adtrail_fake_meta::PET_PIXEL;
    let h = Harness::start().await;
    h.link_agency().await;
    let keys = &h.app.local.keys;
    let wide = keys
        .sign(json!({"sub": "u7", "scope": "adtrail:configure", "sites": ["loja-x", "pet-mania"]}));
    let narrow = keys.sign(json!({"sub": "u7", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let body = |v: Value| Some(v.to_string());
    let (s, b) = h
        .call_as(
            Some(&wide),
            "PUT",
            "/v1/meta/connections/me",
            body(json!({"accessToken": TOKEN})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = h
        .call_as(
            Some(&wide),
            "PUT",
            "/v1/sites/pet-mania/pixel",
            body(json!({"pixelId": PET_PIXEL.0, "ownerKey": "me"})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    // The grant no longer covers pet-mania: removing, reconnecting or
    // refreshing the owner would delete or mark its pixel there.
    for (method, path, payload) in [
        ("DELETE", "/v1/meta/connections/me", None),
        (
            "PUT",
            "/v1/meta/connections/me",
            body(json!({"accessToken": TOKEN})),
        ),
        ("POST", "/v1/meta/connections/me/refresh", None),
    ] {
        let (s, b) = h.call_as(Some(&narrow), method, path, payload).await;
        assert_eq!((s, code(&b)), (403, "FORBIDDEN"), "{method} {path}: {b}");
        assert!(message(&b).contains("pet-mania"), "{b}");
    }
    let pixel = h
        .store()
        .pixels()
        .get_pixel("pet-mania")
        .await
        .expect("read")
        .expect("the pixel is still there");
    assert_eq!(pixel.owner(), Some("dashboard:u7"));
    assert!(!pixel.not_granted, "nothing was marked");
    // With the wide grant again, the owner goes, its pixel with it.
    let (s, b) = h
        .call_as(Some(&wide), "DELETE", "/v1/meta/connections/me", None)
        .await;
    assert_eq!((s, b["pixelsRemoved"].as_i64()), (200, Some(1)), "{b}");
}
