//! Linking ad accounts: one site per account, only listed accounts, at most
//! 20 a site.

use adtrail_store::connections::ListedAccount;
use adtrail_tests::*;
use serde_json::json;

use super::{code, message};

#[tokio::test]
async fn links_follow_the_rules_one_site_per_account_and_only_listed_accounts() {
    let h = Harness::start().await;
    h.link_agency().await;
    let (status, body) = h
        .call(
            "PUT",
            &format!("/v1/sites/pet-mania/ad-accounts/{LOJA_PRINCIPAL}"),
            Some(json!({"ownerKey": "agency"})),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "CONFLICT"));
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/ad-accounts/act_999",
            Some(json!({"ownerKey": "agency"})),
        )
        .await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
    let (status, body) = h
        .call(
            "PUT",
            &format!("/v1/sites/pet-mania/ad-accounts/{PET_EAST}"),
            Some(json!({"ownerKey": "nobody"})),
        )
        .await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
    // Linking again what is linked changes nothing.
    let (status, _) = h
        .call(
            "PUT",
            &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
            Some(json!({"ownerKey": "agency"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = h
        .call("DELETE", "/v1/sites/pet-mania/ad-accounts/act_123", None)
        .await;
    assert_eq!((status, code(&body)), (404, "NOT_FOUND"));
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/ad-accounts/123",
            Some(json!({"ownerKey": "agency"})),
        )
        .await;
    assert_eq!((status, code(&body)), (400, "INVALID_ARGUMENT"));
    assert!(message(&body).contains("adAccountId"));
}

#[tokio::test]
async fn a_site_links_at_most_20_accounts() {
    let h = Harness::start().await;
    h.call(
        "PUT",
        "/v1/sites/big",
        Some(json!({"name": "Big", "currency": "USD"})),
    )
    .await;
    let listing: Vec<ListedAccount> = (0..21)
        .map(|i| ListedAccount {
            ad_account_id: format!("act_90000{i:02}"),
            name: format!("A{i}"),
            currency: "USD".into(),
            timezone: "UTC".into(),
        })
        .collect();
    h.store()
        .connections()
        .put_connection("many", vec![1, 2, 3], "v1", &listing, &[], T0)
        .await
        .unwrap();
    for account in &listing[..20] {
        let (status, body) = h
            .call(
                "PUT",
                &format!("/v1/sites/big/ad-accounts/{}", account.ad_account_id),
                Some(json!({"ownerKey": "many"})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = h
        .call(
            "PUT",
            "/v1/sites/big/ad-accounts/act_9000020",
            Some(json!({"ownerKey": "many"})),
        )
        .await;
    assert_eq!((status, code(&body)), (409, "LIMIT_EXCEEDED"));
    assert!(
        h.store()
            .links()
            .get_link("big", "act_9000020")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.store()
            .links()
            .account_claim("act_9000020")
            .await
            .unwrap()
            .is_none(),
        "the refused link left no claim"
    );
}
