//! Pixels: listed by a connect, sending with the connection's token or their
//! own sealed one.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::code;

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
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    a_pixel_from_the_connections_listing(h).await;
    let own = a_pixel_with_a_token_of_its_own(h).await;
    refusals_change_nothing(h, own).await;
}

/// From the connection's listing: test mode on, named; a pixel the
/// listing lacks is not found.
async fn a_pixel_from_the_connections_listing(h: &Harness) {
    use adtrail_fake_meta::LOJA_PIXEL;
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
}

/// With a token of its own: checked against the pixel, sealed, never shown.
async fn a_pixel_with_a_token_of_its_own(h: &Harness) -> &'static str {
    use adtrail_fake_meta::PET_PIXEL;
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
    own
}

/// Refusals (a pixel unknown, a refused token, both sources, a bad id or
/// test code) change nothing; a removed pixel is gone.
async fn refusals_change_nothing(h: &Harness, own: &str) {
    use adtrail_fake_meta::PET_PIXEL;
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
