//! The owner's Pages: listed at connect with Lead Ads on, each Page's token
//! sealed under the owner and the Page, shown without a token.
use adtrail_fake_meta::{SAMPLE_PAGES, page_token};
use adtrail_tests::*;
use serde_json::json;

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
