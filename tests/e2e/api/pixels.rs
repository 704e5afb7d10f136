//! Pixels: listed by a connect, sending with the connection's token or their
//! own sealed one, and the ownership rules.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message};

#[tokio::test]
async fn a_connect_lists_the_pixels_its_accounts_own_once_each() {
    use adtrail_fake_meta::{Knobs, LOJA_PIXEL, PET_PIXEL, Throttle};
    let h = Harness::start().await;
    let body = h.connect(TOKEN).await;
    let ids = |b: &Value| -> Vec<String> {
        b["pixels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["pixelId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&body),
        vec![LOJA_PIXEL.0.to_owned(), PET_PIXEL.0.to_owned()]
    );
    // An account whose pixels the token may not read is skipped.
    h.fake().set_knobs(Knobs {
        deny_pixels: vec![PET_EAST.into()],
        ..Knobs::default()
    });
    assert_eq!(ids(&h.connect(TOKEN).await), vec![LOJA_PIXEL.0.to_owned()]);
    // When Meta throttles the listing, the pixels already known are kept.
    h.fake().set_knobs(Knobs {
        throttle: Some(Throttle {
            code: 17,
            remaining: 10,
            regain_minutes: 60,
            only_path: Some("adspixels".into()),
        }),
        ..Knobs::default()
    });
    let body = h.connect(TOKEN).await;
    assert_eq!(ids(&body), vec![LOJA_PIXEL.0.to_owned()]);
    let (_, conn) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(ids(&conn), vec![LOJA_PIXEL.0.to_owned()]);
}

#[tokio::test]
async fn a_pixel_sends_with_the_connections_token_or_its_own_sealed_one() {
    use adtrail_fake_meta::{LOJA_PIXEL, PET_PIXEL};
    let h = Harness::start().await;
    h.link_agency().await;
    // From the connection's listing.
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(
                json!({"pixelId": LOJA_PIXEL.0, "ownerKey": "agency", "testEventCode": "TEST123"}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, st) = h
        .call("GET", "/v1/meta/status?siteIds=loja-x,pet-mania", None)
        .await;
    let pixel = &st["sites"][0]["pixel"];
    assert_eq!(
        (
            pixel["pixelId"].as_str(),
            pixel["source"].as_str(),
            pixel["enabled"].as_bool(),
            pixel["testMode"].as_bool()
        ),
        (
            Some(LOJA_PIXEL.0),
            Some("connection"),
            Some(true),
            Some(true)
        )
    );
    assert_eq!(pixel["name"], LOJA_PIXEL.1);
    assert_eq!(st["sites"][1]["pixel"]["pixelId"], Value::Null);
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": "1234", "ownerKey": "agency"})),
        )
        .await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
    // With a token of its own: checked against the pixel, sealed, never shown.
    let own = "EAAB-pixel-own-token-55";
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/pixel",
            Some(json!({"pixelId": PET_PIXEL.0, "accessToken": own, "enabled": false})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["pixel"]["source"].as_str(),
            body["pixel"]["enabled"].as_bool()
        ),
        (Some("token"), Some(false))
    );
    assert!(!body.to_string().contains(own));
    let stored = h
        .store()
        .pixels()
        .get_pixel("pet-mania")
        .await
        .unwrap()
        .unwrap();
    match &stored.source {
        adtrail_domain::pixels::PixelSource::Token { sealed_token, .. } => {
            assert!(!sealed_token.windows(own.len()).any(|w| w == own.as_bytes()))
        }
        other => panic!("{other:?}"),
    }
    assert!(
        h.fake()
            .requests()
            .iter()
            .any(|r| r.path == format!("/v25.0/{}", PET_PIXEL.0)
                && r.authorization.as_deref() == Some(&*format!("Bearer {own}")))
    );
    for (body, status, want) in [
        (
            json!({"pixelId": "999", "accessToken": own}),
            404,
            "NOT_FOUND",
        ),
        (
            json!({"pixelId": PET_PIXEL.0, "accessToken": "EAAB-invalid-x"}),
            422,
            "META_TOKEN_INVALID",
        ),
        (
            json!({"pixelId": PET_PIXEL.0, "accessToken": own, "ownerKey": "agency"}),
            400,
            "INVALID_ARGUMENT",
        ),
        (
            json!({"pixelId": "p1", "ownerKey": "agency"}),
            400,
            "INVALID_ARGUMENT",
        ),
        (
            json!({"pixelId": PET_PIXEL.0, "ownerKey": "agency", "testEventCode": "bad code"}),
            400,
            "INVALID_ARGUMENT",
        ),
    ] {
        let (s, b) = h
            .call("PUT", "/v1/sites/pet-mania/pixel", Some(body.clone()))
            .await;
        assert_eq!((s, code(&b)), (status, want), "{body}: {b}");
    }
    assert_eq!(
        h.store()
            .pixels()
            .get_pixel("pet-mania")
            .await
            .unwrap()
            .unwrap()
            .pixel_id,
        PET_PIXEL.0,
        "refusals changed nothing"
    );
    let (status, _) = h.call("DELETE", "/v1/sites/pet-mania/pixel", None).await;
    assert_eq!(status, 200);
    let (status, body) = h.call("DELETE", "/v1/sites/pet-mania/pixel", None).await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
}

#[tokio::test]
async fn a_dashboard_never_takes_or_undoes_what_another_owner_made() {
    let h = Harness::start().await;
    h.link_agency().await; // the host's owner `agency` linked every account
    let keys = &h.app.local.keys;
    let dash = keys.sign(json!({"sub": "u9", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let body = |v: Value| Some(v.to_string());
    let (s, b) = h
        .call_as(
            Some(&dash),
            "PUT",
            "/v1/meta/connections/me",
            body(json!({"accessToken": TOKEN})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    // Linking or unlinking the agency's link: CONFLICT.
    let path = format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}");
    let (s, b) = h
        .call_as(Some(&dash), "PUT", &path, body(json!({"ownerKey": "me"})))
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h.call_as(Some(&dash), "DELETE", &path, None).await;
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
    // The pixel: the agency sets it; the dashboard may not replace or
    // remove it, nor save the event map.
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pixel",
        Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
    )
    .await;
    let (s, b) = h
        .call_as(
            Some(&dash),
            "PUT",
            "/v1/sites/loja-x/pixel",
            body(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "me"})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    let (s, b) = h
        .call_as(Some(&dash), "DELETE", "/v1/sites/loja-x/pixel", None)
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
            Some(&dash),
            "PUT",
            "/v1/sites/loja-x/event-map",
            body(json!({"columns": {"agendado": "Schedule"}})),
        )
        .await;
    assert_eq!((s, code(&b)), (409, "CONFLICT"), "{b}");
    // Status marks what is the caller's own.
    let (s, status) = h
        .call_as(Some(&dash), "GET", "/v1/meta/status?siteIds=loja-x", None)
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
    // Once the agency unlinks, the dashboard links the account as its own.
    let (s, _) = h
        .call("DELETE", &format!("{path}?ownerKey=agency"), None)
        .await;
    assert_eq!(s, 200);
    let (s, b) = h
        .call_as(Some(&dash), "PUT", &path, body(json!({"ownerKey": "me"})))
        .await;
    assert_eq!(s, 201, "{b}");
    let (s, _) = h.call_as(Some(&dash), "DELETE", &path, None).await;
    assert_eq!(s, 200);
    // A dashboard whose grant lost a site its owner feeds may not reconnect
    // the whole owner; the answer names the site.
    let (s, b) = h
        .call_as(Some(&dash), "PUT", &path, body(json!({"ownerKey": "me"})))
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
