//! The owner's Pages: listed at connect with Lead Ads on, each Page's token
//! sealed under the owner and the Page, shown without a token.
use adtrail_fake_meta::{SAMPLE_PAGES, page_token};
use adtrail_tests::*;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_lists_the_owners_pages_and_seals_their_tokens() {
    let h = Harness::start().await;
    let (s, b) = h
        .call("GET", "/v1/meta/connections/agency/pages", None)
        .await;
    assert_eq!(s, 404, "no connection yet: {b}");
    h.connect(TOKEN).await;
    let b = h
        .expect(200, "GET", "/v1/meta/connections/agency/pages", None)
        .await;
    let pages = b["pages"].as_array().unwrap();
    assert_eq!(pages.len(), SAMPLE_PAGES.len());
    assert_eq!(
        pages
            .iter()
            .map(|p| (
                p["pageId"].as_str().unwrap(),
                p["leadsAllowed"].as_bool().unwrap()
            ))
            .collect::<Vec<_>>(),
        [("100200300", true), ("900800700", false)],
        "Loja X's Page can advertise; Pet Mania's only analyses"
    );
    assert_eq!(pages[0]["tasks"][0], json!("ADVERTISE"));
    assert!(!b.to_string().contains("EAAP-"), "never a Page token");
    // Each token sealed under its owner and Page: it opens only there.
    let stored = h.store().pages().list_pages("agency").await.unwrap();
    let loja = stored.iter().find(|p| p.page_id == "100200300").unwrap();
    let sealer = h.store().sealer();
    assert_eq!(
        sealer
            .unseal_page("agency", "100200300", &loja.sealed_token)
            .await
            .unwrap(),
        page_token("100200300")
    );
    assert!(
        sealer
            .unseal_page("agency", "900800700", &loja.sealed_token)
            .await
            .is_err(),
        "not under another Page"
    );
    assert!(
        sealer
            .unseal_page("other", "100200300", &loja.sealed_token)
            .await
            .is_err(),
        "not under another owner"
    );
    // A refresh lists them again, with new token versions.
    h.expect(200, "POST", "/v1/meta/connections/agency/refresh", None)
        .await;
    let again = h.store().pages().list_pages("agency").await.unwrap();
    assert_eq!(again.len(), 2);
    assert_ne!(again[0].token_version, stored[0].token_version);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_lead_ads_off_no_page_is_read_or_kept() {
    let h = Harness::start().await;
    let off = adtrail_api::Api {
        lead_ads: false,
        ..h.runner().api.clone()
    };
    let body = json!({"accessToken": TOKEN}).to_string();
    let (s, b) = call_handler(&off, "PUT", "/v1/meta/connections/agency", body.as_bytes()).await;
    assert_eq!(s, 200, "{b}");
    assert!(
        h.store()
            .pages()
            .list_pages("agency")
            .await
            .unwrap()
            .is_empty(),
        "no Page token kept"
    );
    assert!(
        !h.fake()
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/me/accounts")),
        "no Page read"
    );
    let (s, b) = call_handler(&off, "GET", "/v1/meta/connections/agency/pages", b"").await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (503, Some("LEAD_ADS_OFF"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_feeds_one_site_and_linking_subscribes_it() {
    let started = Harness::start().await;
    let h = &started;
    h.put_site("loja-x", "BRL").await;
    h.put_site("pet-mania", "USD").await;
    h.connect(TOKEN).await;
    let body = json!({"ownerKey": "agency"});
    linking_subscribes_the_app_with_the_pages_token(h, &body).await;
    one_site_a_page(h, &body).await;
    unlinked_the_subscription_goes(h, body).await;
}

/// Pet Mania's Page lets the user only analyse: its leads cannot be read;
/// a Page the token does not list is not found; Loja X's links and Meta
/// takes the subscription with the Page's own token.
async fn linking_subscribes_the_app_with_the_pages_token(h: &Harness, body: &Value) {
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/pages/900800700",
            Some(body.clone()),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (422, Some("META_PERMISSION_MISSING")),
        "{b}"
    );
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/pages/123", Some(body.clone()))
        .await;
    assert_eq!(s, 404, "a Page the token does not list");
    let b = h
        .expect(
            201,
            "PUT",
            "/v1/sites/loja-x/pages/100200300",
            Some(body.clone()),
        )
        .await;
    assert_eq!(b["pageId"], json!("100200300"));
    assert!(
        h.fake().page_subscribed("100200300"),
        "Meta took the subscription"
    );
    assert!(
        h.fake()
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/100200300/subscribed_apps")
                && r.authorization.as_deref()
                    == Some(&format!("Bearer {}", page_token("100200300")))),
        "with the Page's own token"
    );
}

/// Again: nothing changes. On another site: one site a Page. The
/// listing shows the link and Pet Mania's Page's error.
async fn one_site_a_page(h: &Harness, body: &Value) {
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pages/100200300",
        Some(body.clone()),
    )
    .await;
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/pages/100200300",
            Some(body.clone()),
        )
        .await;
    assert_eq!((s, b["error"]["code"].as_str()), (409, Some("CONFLICT")));
    let listed = h
        .expect(200, "GET", "/v1/meta/connections/agency/pages", None)
        .await;
    assert_eq!(listed["pages"][0]["linkedSiteId"], json!("loja-x"));
    assert_eq!(listed["pages"][0]["own"], json!(true));
    assert_eq!(listed["pages"][0]["lastError"], json!(null));
    assert!(
        listed["pages"][1]["lastError"]
            .as_str()
            .unwrap()
            .starts_with("META_PERMISSION_MISSING"),
        "Pet Mania's Page only analyses"
    );
    assert!(listed["pages"][0]["subscribedAt"].is_i64());
}

/// Unlinked: the subscription goes with it; now the other site may have
/// the Page.
async fn unlinked_the_subscription_goes(h: &Harness, body: Value) {
    let b = h
        .expect(200, "DELETE", "/v1/sites/loja-x/pages/100200300", None)
        .await;
    assert_eq!(b["removed"], json!(true));
    assert!(!h.fake().page_subscribed("100200300"));
    let (s, _) = h
        .call("DELETE", "/v1/sites/loja-x/pages/100200300", None)
        .await;
    assert_eq!(s, 404);
    // Now the other site may have it.
    h.expect(
        201,
        "PUT",
        "/v1/sites/pet-mania/pages/100200300",
        Some(body),
    )
    .await;
}
