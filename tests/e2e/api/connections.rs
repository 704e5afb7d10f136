//! Meta connections: a refused token is never stored or echoed, listings are
//! complete and never carry the token, refresh, preview and forgetting an
//! owner.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message, sale};

#[tokio::test]
async fn a_token_meta_refuses_is_a_422_and_is_never_stored_or_echoed() {
    let h = Harness::start().await;
    let secret = "EAAB-invalid-secret-token-77";
    let (status, body) = h
        .call(
            "PUT",
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": secret})),
        )
        .await;
    assert_eq!((status, code(&body)), (422, "META_TOKEN_INVALID"));
    assert!(!body.to_string().contains(secret));
    let (status, body) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
    let (status, body) = h
        .call(
            "PUT",
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": "has space"})),
        )
        .await;
    assert_eq!((status, code(&body)), (400, "INVALID_ARGUMENT"));
    assert!(message(&body).contains("accessToken"));
}

#[tokio::test]
async fn the_connection_lists_accounts_and_never_its_token() {
    let h = Harness::start().await;
    let body = h.connect(TOKEN).await;
    assert_eq!(body["adAccounts"].as_array().unwrap().len(), 4);
    // Meta's requests carried the token in the header only.
    for r in h.fake().requests() {
        assert_eq!(
            r.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
        assert!(!r.query.contains(TOKEN) && !r.path.contains(TOKEN));
    }
    let (_, conn) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(conn["status"], "active");
    assert!(!conn.to_string().contains(TOKEN));
    let stored = h.connection("agency").await;
    assert!(
        !stored
            .sealed_token
            .windows(TOKEN.len())
            .any(|w| w == TOKEN.as_bytes()),
        "sealed, not plain"
    );
}

#[tokio::test]
async fn the_sample_agency_lists_every_page_of_accounts() {
    let h = Harness::start().await;
    h.fake().set_knobs(adtrail_fake_meta::Knobs {
        max_page: Some(1),
        ..Default::default()
    });
    let body = h.connect(TOKEN).await;
    assert_eq!(body["adAccounts"].as_array().unwrap().len(), 4);
    let pages = h
        .fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/me/adaccounts"))
        .count();
    assert_eq!(pages, 4);
    // Meta puts the token in every `next` link (the fake too); the client
    // takes it out and sends it in the header, so no request URL carries it.
    for r in h.fake().requests() {
        // (`fields=…access_token` asks for the Pages' tokens: a field name,
        // not a token.)
        assert!(
            !url_decode(&r.query).contains_key("access_token"),
            "{} {}",
            r.path,
            r.query
        );
        if r.path.ends_with("/me/adaccounts") {
            assert_eq!(
                r.authorization.as_deref(),
                Some(format!("Bearer {TOKEN}").as_str())
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_preview_and_forgetting_an_owner() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.sync_until_live(10).await;
    an_unlink_preview_says_what_unlinking_takes(h).await;
    a_refresh_reads_every_page_of_the_listing(h).await;
    forgetting_the_owner_takes_its_links_pixels_and_token(h).await;
}

/// What unlinking would take from the site: its spend, days and
/// campaigns; an account the site does not have is not found.
async fn an_unlink_preview_says_what_unlinking_takes(h: &Harness) {
    let path = format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}/unlink-preview");
    let (s, preview) = h.call("GET", &path, None).await;
    assert_eq!(s, 200, "{preview}");
    let sums = h
        .store()
        .spend()
        .day_sums("loja-x", LOJA_PRINCIPAL, 0, 9_999_999_999_999)
        .await
        .unwrap();
    let spend: i64 = sums.values().map(|f| f.spend_cents).sum();
    assert_eq!(preview["spendCents"], spend);
    assert_eq!(preview["days"], sums.len());
    assert_eq!(preview["currency"], "BRL");
    assert_eq!(preview["campaigns"], 3, "the sample's three campaigns");
    assert_eq!(preview["partial"], false);
    let (s, _) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/ad-accounts/{PET_EAST}/unlink-preview"),
            None,
        )
        .await;
    assert_eq!(s, 404);
}

/// A refresh reads the listing again with the stored token, every page
/// (the alignment of links with a listing is the connect's, tested there).
async fn a_refresh_reads_every_page_of_the_listing(h: &Harness) {
    h.fake().tune(|k| k.max_page = Some(1));
    let b = h
        .expect(200, "POST", "/v1/meta/connections/agency/refresh", None)
        .await;
    assert_eq!(
        b["adAccounts"].as_array().unwrap().len(),
        4,
        "every page read"
    );
}

/// Forgetting the owner: its links (their spend leaves in batches), its
/// pixels, its token; forgetting it again removes nothing.
async fn forgetting_the_owner_takes_its_links_pixels_and_token(h: &Harness) {
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/pixel",
            Some(json!({"pixelId": adtrail_fake_meta::PET_PIXEL.0, "ownerKey": "agency"})),
        )
        .await;
    assert_eq!(s, 200);
    let b = h
        .expect(200, "DELETE", "/v1/meta/connections/agency", None)
        .await;
    assert_eq!(
        (
            b["removed"].clone(),
            b["unlinked"].clone(),
            b["pixelsRemoved"].clone()
        ),
        (json!(true), json!(4), json!(1))
    );
    assert!(
        h.store()
            .connections()
            .get_connection("agency")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.store()
            .pixels()
            .get_pixel("pet-mania")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.store()
            .links()
            .site_links("loja-x")
            .await
            .unwrap()
            .is_empty()
    );
    h.runner().tick().await.unwrap();
    assert!(
        h.all_rows("loja-x", LOJA_PRINCIPAL).await.is_empty(),
        "the sweeper purged the spend"
    );
    let (s, b) = h.call("DELETE", "/v1/meta/connections/agency", None).await;
    assert_eq!((s, b["removed"].clone()), (200, json!(false)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_authorized_and_pixels_a_new_listing_no_longer_grants() {
    let h = Harness::start().await;
    h.link_agency().await;
    let (s, c) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(s, 200);
    assert_eq!(
        c["authorizedBy"],
        json!({"id": adtrail_fake_meta::ME_ID, "name": adtrail_fake_meta::ME_NAME})
    );
    assert_eq!(c["authorizedAt"], h.now());
    assert_eq!(
        (c["expiresAt"].clone(), c["expiringSoon"].clone()),
        (Value::Null, json!(false))
    );
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
        )
        .await;
    assert_eq!(s, 200);
    // The token no longer reaches Loja X's pixels: the pixel stops.
    h.fake()
        .tune(|k| k.deny_pixels = vec![LOJA_PRINCIPAL.into(), LOJA_MANAUS.into()]);
    let (s, _) = h
        .call("POST", "/v1/meta/connections/agency/refresh", None)
        .await;
    assert_eq!(s, 200);
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    let error = status["sites"][0]["pixel"]["lastError"]
        .as_str()
        .unwrap_or("");
    assert!(error.starts_with("PIXEL_NOT_GRANTED"), "{status}");
    assert_eq!(
        sale(&h, "ana").await,
        json!([]),
        "a pixel not granted queues nothing"
    );
    // Listed again: it sends again.
    h.fake().tune(|k| k.deny_pixels = vec![]);
    let (s, _) = h
        .call("POST", "/v1/meta/connections/agency/refresh", None)
        .await;
    assert_eq!(s, 200);
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    assert!(
        status["sites"][0]["pixel"]["lastError"].is_null(),
        "{status}"
    );
    assert_eq!(sale(&h, "bia").await, json!(["Purchase"]));
}

/// An agency with 500 ad accounts, 100 of them owning a pixel, with Meta
/// answering at 300 ms a call: the connect lists them all and answers
/// within API Gateway's 29 seconds (the pixel listings go ten at a time);
/// its removal unlinks site by site, the sites at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_agency_connects_and_is_removed_within_api_gateways_29_seconds() {
    let h = Harness::start().await;
    h.fake().tune(|k| {
        k.extra_accounts = 496;
        k.pixel_accounts = 100;
        k.latency_ms = 300;
    });
    let started = std::time::Instant::now();
    let body = h.connect(TOKEN).await;
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(29),
        "the connect took {took:?}"
    );
    assert_eq!(body["adAccounts"].as_array().map(Vec::len), Some(500));
    // The first 100 accounts' pixels: the sample's two, and 96 of the
    // agency's.
    assert_eq!(
        body["pixels"].as_array().map(Vec::len),
        Some(98),
        "{}",
        body["pixels"]
    );

    // 60 of its accounts feed three sites; removing the owner unlinks them
    // site by site, the sites at once.
    for n in 0..3 {
        let site = format!("big-{n}");
        h.put_site(&site, "BRL").await;
        for i in 0..20 {
            h.link_account(&site, &format!("act_8{:09}", n * 20 + i), "agency")
                .await;
        }
    }
    let started = std::time::Instant::now();
    let (s, b) = h.call("DELETE", "/v1/meta/connections/agency", None).await;
    let took = started.elapsed();
    assert_eq!((s, b["unlinked"].as_i64()), (200, Some(60)), "{b}");
    assert!(
        took < std::time::Duration::from_secs(29),
        "the removal took {took:?}"
    );
    for n in 0..3 {
        assert!(
            h.store()
                .links()
                .site_links(&format!("big-{n}"))
                .await
                .unwrap()
                .is_empty()
        );
    }
}
