//! The API's contract for bad input, authentication, grants and the link
//! rules: a clear 4xx naming the field, and nothing written.

use adtrail_store::connections::ListedAccount;
use adtrail_tests::*;
use serde_json::{Value, json};

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}
fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn requests_without_a_valid_token_are_refused_before_the_function() {
    let h = Harness::start().await;
    for token in [None, Some("not-a-jwt"), Some("a.b.c")] {
        let (status, _) = h
            .call_as(token, "GET", "/v1/meta/status?siteIds=a", None)
            .await;
        assert_eq!(status, 401);
    }
    let foreign = adtrail_local::jwt::DevKeys::local().host_token();
    let (status, _) = h
        .call_as(Some(&foreign), "GET", "/v1/meta/status?siteIds=a", None)
        .await;
    assert_eq!(status, 401, "a token signed with another key");
}

#[tokio::test]
async fn bad_site_input_is_a_400_naming_the_field_and_writes_nothing() {
    let h = Harness::start().await;
    let token = h.app.host_token();
    let cases: Vec<(&str, String, &str)> = vec![
        ("/v1/sites/s1", "{not json".into(), "body"),
        ("/v1/sites/s1", "".into(), "body"),
        (
            "/v1/sites/s1",
            r#"{"name":"A","currency":"BRL","colour":"red"}"#.into(),
            "colour",
        ),
        (
            "/v1/sites/s1",
            r#"{"name":5,"currency":"BRL"}"#.into(),
            "name",
        ),
        ("/v1/sites/s1", r#"{"currency":"BRL"}"#.into(), "name"),
        (
            "/v1/sites/s1",
            r#"{"name":"A","currency":"brl"}"#.into(),
            "currency",
        ),
        (
            "/v1/sites/s1",
            r#"{"name":"A","currency":"BRL","country":"BRA"}"#.into(),
            "country",
        ),
        (
            "/v1/sites/s1",
            r#"{"name":"A\u0000","currency":"BRL"}"#.into(),
            "name",
        ),
        (
            "/v1/sites/s1",
            format!(r#"{{"name":"{}","currency":"BRL"}}"#, "x".repeat(70_000)),
            "body",
        ),
        (
            "/v1/sites/bad%20id",
            r#"{"name":"A","currency":"BRL"}"#.into(),
            "siteId",
        ),
        (
            &*Box::leak(format!("/v1/sites/{}", "x".repeat(129)).into_boxed_str()),
            r#"{"name":"A","currency":"BRL"}"#.into(),
            "siteId",
        ),
    ];
    for (path, body, field) in cases {
        let (status, answer) = h
            .call_as(Some(&token), "PUT", path, Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{path} {body:.80}: {answer}");
        assert_eq!(code(&answer), "INVALID_ARGUMENT");
        assert!(message(&answer).contains(field), "{field} in {answer}");
    }
    assert!(
        h.aws().get_site("s1").await.unwrap().is_none(),
        "nothing was written"
    );
}

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
    let stored = h.aws().get_connection("agency").await.unwrap().unwrap();
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
}

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
    h.aws()
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
        h.aws()
            .get_link("big", "act_9000020")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        h.aws()
            .account_claim("act_9000020")
            .await
            .unwrap()
            .is_none(),
        "the refused link left no claim"
    );
}

#[tokio::test]
async fn dashboards_read_only_their_granted_sites() {
    let h = Harness::start().await;
    h.link_agency().await;
    let keys = &h.app.local.keys;
    let reader = keys.sign(json!({"sub": "u1", "scope": "adtrail:read", "sites": ["loja-x"]}));
    let (status, _) = h
        .call_as(Some(&reader), "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(status, 200);
    let (status, body) = h
        .call_as(
            Some(&reader),
            "GET",
            "/v1/meta/status?siteIds=loja-x,pet-mania",
            None,
        )
        .await;
    assert_eq!((status, code(&body)), (403, "FORBIDDEN"));
    assert!(
        !body.to_string().contains("pet-mania"),
        "names nothing of the other site"
    );
    let (status, _) = h
        .call_as(
            Some(&reader),
            "PUT",
            "/v1/sites/loja-x",
            Some(r#"{"name":"x","currency":"BRL"}"#.into()),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = h
        .call_as(
            Some(&reader),
            "DELETE",
            &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
            None,
        )
        .await;
    assert_eq!(status, 403, "reading is not configuring");
    // A connection listing shows a link outside the grant without its site.
    let configure =
        keys.sign(json!({"sub": "u1", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let (status, _) = h
        .call_as(Some(&configure), "GET", "/v1/meta/connections/agency", None)
        .await;
    assert_eq!(status, 403, "another owner's connection");
    // Its own connection (the same agency token) shows the accounts linked
    // to a site outside its grant without naming the site.
    let dash =
        keys.sign(json!({"sub": "u2", "scope": "adtrail:configure", "sites": ["pet-mania"]}));
    let (status, body) = h
        .call_as(
            Some(&dash),
            "PUT",
            "/v1/meta/connections/me",
            Some(json!({"accessToken": TOKEN}).to_string()),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, own) = h
        .call_as(Some(&dash), "GET", "/v1/meta/connections/me", None)
        .await;
    assert_eq!(
        (status, own["ownerKey"].as_str()),
        (200, Some("dashboard:u2"))
    );
    for account in own["adAccounts"].as_array().unwrap() {
        let id = account["adAccountId"].as_str().unwrap();
        if id == PET_EAST || id == PET_WEST {
            assert_eq!(
                (
                    account["linkedSiteId"].as_str(),
                    account["linkedOutsideScope"].as_bool()
                ),
                (Some("pet-mania"), Some(false))
            );
        } else {
            assert_eq!(
                (
                    account["linkedSiteId"].as_str(),
                    account["linkedOutsideScope"].as_bool()
                ),
                (None, Some(true))
            );
        }
    }
    assert!(!own.to_string().contains("loja-x"));
}

#[tokio::test]
async fn reads_check_their_ranges_and_site_lists() {
    let h = Harness::start().await;
    h.call(
        "PUT",
        "/v1/sites/s1",
        Some(json!({"name": "S", "currency": "USD"})),
    )
    .await;
    let day = 86_400_000i64;
    let cases = [
        (
            format!("/v1/sites/s1/spend?from={}&to={}", 0, 366 * day),
            "to",
        ),
        (format!("/v1/sites/s1/spend?from={}&to={}", 5, day), "from"),
        (
            format!("/v1/sites/s1/spend?from={}&to={}", 2 * day, day),
            "to",
        ),
        ("/v1/sites/s1/spend?from=0".to_owned(), "to"),
        ("/v1/sites/s1/spend?from=0&to=0&x=1".to_owned(), "x"),
        ("/v1/meta/status".to_owned(), "siteIds"),
        ("/v1/meta/status?siteIds=s1,s1".to_owned(), "siteIds"),
        (
            format!(
                "/v1/meta/status?siteIds={}",
                (0..11)
                    .map(|i| format!("s{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "siteIds",
        ),
    ];
    for (path, field) in cases {
        let (status, body) = h.call("GET", &path, None).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert!(message(&body).contains(field), "{field} in {body}");
    }
    let (status, body) = h
        .call(
            "GET",
            &format!("/v1/sites/s1/spend?from=0&to={}", 365 * day),
            None,
        )
        .await;
    assert_eq!(status, 200, "366 days is allowed: {body}");
    assert_eq!(body["days"].as_array().unwrap().len(), 366);
}

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
    let stored = h.aws().get_pixel("pet-mania").await.unwrap().unwrap();
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
        h.aws()
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
        h.aws()
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
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
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

/// Every route the API serves, with a body it accepts, and who may call it.
#[derive(Clone, Copy, PartialEq)]
enum Needs {
    Host,
    Configure,
    Read,
}

fn every_route() -> Vec<(&'static str, String, Option<Value>, Needs)> {
    use Needs::*;
    let acct = LOJA_PRINCIPAL;
    vec![
        (
            "PUT",
            "/v1/sites/loja-x".into(),
            Some(json!({"name": "x", "currency": "BRL"})),
            Host,
        ),
        (
            "PUT",
            "/v1/meta/connections/me".into(),
            Some(json!({"accessToken": TOKEN})),
            Configure,
        ),
        ("GET", "/v1/meta/connections/me".into(), None, Read),
        (
            "PUT",
            format!("/v1/sites/loja-x/ad-accounts/{acct}"),
            Some(json!({"ownerKey": "me"})),
            Configure,
        ),
        (
            "DELETE",
            format!("/v1/sites/loja-x/ad-accounts/{acct}"),
            None,
            Configure,
        ),
        ("POST", "/v1/sites/loja-x/sync".into(), None, Configure),
        (
            "PUT",
            "/v1/sites/loja-x/pixel".into(),
            Some(json!({"pixelId": "1100000000000001", "ownerKey": "me"})),
            Configure,
        ),
        ("DELETE", "/v1/sites/loja-x/pixel".into(), None, Configure),
        (
            "PUT",
            "/v1/sites/loja-x/pipeline".into(),
            Some(json!({"columns": []})),
            Host,
        ),
        (
            "PUT",
            "/v1/sites/loja-x/event-map".into(),
            Some(json!({"columns": {}})),
            Configure,
        ),
        ("GET", "/v1/sites/loja-x/event-map".into(), None, Read),
        (
            "POST",
            "/v1/sites/loja-x/leads".into(),
            Some(json!({"leadKey": "a", "changeId": "c", "occurredAt": T0, "origin": "organic"})),
            Host,
        ),
        (
            "POST",
            "/v1/sites/loja-x/leads/a/stage".into(),
            Some(json!({"changeId": "d", "occurredAt": T0, "stage": "won"})),
            Host,
        ),
        ("DELETE", "/v1/sites/loja-x/leads/a".into(), None, Host),
        ("GET", "/v1/sites/loja-x/conversions".into(), None, Read),
        ("GET", "/v1/meta/status?siteIds=loja-x".into(), None, Read),
        (
            "GET",
            format!(
                "/v1/reports/daily?siteIds=loja-x&from={0}&to={0}",
                T0 - T0 % 86_400_000
            ),
            None,
            Read,
        ),
        (
            "GET",
            format!(
                "/v1/reports/leads?siteIds=loja-x&from={0}&to={0}",
                T0 - T0 % 86_400_000
            ),
            None,
            Read,
        ),
        (
            "GET",
            format!("/v1/sites/loja-x/ad-accounts/{acct}/unlink-preview"),
            None,
            Read,
        ),
        (
            "POST",
            "/v1/meta/connections/me/refresh".into(),
            None,
            Configure,
        ),
        (
            "POST",
            "/v1/meta/connections/me/login".into(),
            Some(json!({"code": "route-code", "redirectUri": "https://app.example.com/cb"})),
            Configure,
        ),
        (
            "GET",
            format!(
                "/v1/sites/loja-x/spend?from={}&to={}",
                T0 - T0 % 86_400_000,
                T0 - T0 % 86_400_000
            ),
            None,
            Read,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_checks_token_scope_and_grant() {
    let h = Harness::start().await;
    let keys = &h.app.local.keys;
    let foreign = adtrail_local::jwt::DevKeys::local();
    let refused =
        [
            ("none", None),
            (
                "expired",
                Some(keys.sign(json!({"sub": "u", "scope": "adtrail:host", "exp": 1}))),
            ),
            ("another key", Some(foreign.host_token())),
            (
                "wrong issuer",
                Some(keys.sign(
                    json!({"sub": "u", "scope": "adtrail:host", "iss": "https://elsewhere/"}),
                )),
            ),
            (
                "wrong audience",
                Some(keys.sign(json!({"sub": "u", "scope": "adtrail:host", "aud": "other"}))),
            ),
        ];
    let reader = keys.sign(json!({"sub": "r", "scope": "adtrail:read", "sites": ["loja-x"]}));
    let configure =
        keys.sign(json!({"sub": "c", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let outside = keys.sign(
        json!({"sub": "o", "scope": "adtrail:configure adtrail:read", "sites": ["pet-mania"]}),
    );
    for (method, path, body, needs) in every_route() {
        let body = body.map(|b| b.to_string());
        for (why, token) in &refused {
            let (s, _) = h
                .call_as(token.as_deref(), method, &path, body.clone())
                .await;
            assert_eq!(s, 401, "{method} {path} with {why}");
        }
        let (s, b) = h.call_as(Some(&reader), method, &path, body.clone()).await;
        if needs != Needs::Read {
            assert_eq!(
                (s, code(&b)),
                (403, "FORBIDDEN"),
                "{method} {path} as a reader"
            );
        } else {
            assert_ne!(s, 403, "{method} {path} as a reader: {b}");
        }
        let (s, b) = h
            .call_as(Some(&configure), method, &path, body.clone())
            .await;
        if needs == Needs::Host {
            assert_eq!(
                (s, code(&b)),
                (403, "FORBIDDEN"),
                "{method} {path} as a dashboard"
            );
        } else {
            assert_ne!(s, 403, "{method} {path} as a configuring dashboard: {b}");
        }
        // A site outside the grant: refused, naming nothing of it (the
        // owner routes name no site).
        if path.contains("loja-x") {
            let (s, b) = h.call_as(Some(&outside), method, &path, body.clone()).await;
            assert_eq!(
                (s, code(&b)),
                (403, "FORBIDDEN"),
                "{method} {path} outside the grant"
            );
            assert!(!message(&b).contains("loja-x"), "{method} {path}: {b}");
        }
        assert!(s < 500, "{method} {path}: {b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_preview_and_forgetting_an_owner() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    // What unlinking would take from the site.
    let path = format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}/unlink-preview");
    let (s, preview) = h.call("GET", &path, None).await;
    assert_eq!(s, 200, "{preview}");
    let sums = h
        .aws()
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

    // A refresh reads the listing again with the stored token, every page
    // (the alignment of links with a listing is the connect's, tested
    // there).
    h.fake().tune(|k| k.max_page = Some(1));
    let (s, b) = h
        .call("POST", "/v1/meta/connections/agency/refresh", None)
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        b["adAccounts"].as_array().unwrap().len(),
        4,
        "every page read"
    );

    // Forgetting the owner: its links (their spend leaves in batches), its
    // pixels, its token.
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/pet-mania/pixel",
            Some(json!({"pixelId": adtrail_fake_meta::PET_PIXEL.0, "ownerKey": "agency"})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, b) = h.call("DELETE", "/v1/meta/connections/agency", None).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (
            b["removed"].clone(),
            b["unlinked"].clone(),
            b["pixelsRemoved"].clone()
        ),
        (json!(true), json!(4), json!(1))
    );
    assert!(h.aws().get_connection("agency").await.unwrap().is_none());
    assert!(h.aws().get_pixel("pet-mania").await.unwrap().is_none());
    assert!(h.aws().site_links("loja-x").await.unwrap().is_empty());
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

/// A lead at Loja X and its sale; answers what the sale queued.
async fn sale(h: &Harness, key: &str) -> Value {
    let (s, b) = h
        .call(
            "POST",
            "/v1/sites/loja-x/leads",
            Some(json!({"leadKey": key, "changeId": format!("{key}-1"), "occurredAt": h.now(), "origin": "organic"})),
        )
        .await;
    assert_eq!(s, 201, "{b}");
    let (_, b) = h
        .call(
            "POST",
            &format!("/v1/sites/loja-x/leads/{key}/stage"),
            Some(json!({"changeId": format!("{key}-2"), "occurredAt": h.now(), "stage": "won", "revenueCents": 100, "meta": adtrail_tests::capi::meta_for(key)})),
        )
        .await;
    b["queued"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_report_counts_by_cohort_next_to_the_spend() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let ad = adtrail_fake_meta::sample_accounts()
        .into_iter()
        .find(|a| a.id == LOJA_PRINCIPAL)
        .unwrap()
        .ads[0]
        .id
        .clone();
    let now = h.now();
    let today = now - now.rem_euclid(86_400_000);
    let yesterday = today - 86_400_000;
    let lead = |key: &str, at: i64, origin: &str| {
        let mut b = json!({"leadKey": key, "changeId": format!("{key}-new"), "occurredAt": at, "origin": origin});
        if origin == "ctwa_ad" {
            b["adId"] = json!(ad);
        }
        b
    };
    for (key, at, origin) in [
        ("carl", now - 86_400_000, "organic"),
        ("ana", now, "ctwa_ad"),
        ("bia", now, "organic"),
    ] {
        let (s, b) = h
            .call(
                "POST",
                "/v1/sites/loja-x/leads",
                Some(lead(key, at, origin)),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    for (key, body) in [
        ("ana", json!({"stage": "won", "revenueCents": 45_990})),
        ("bia", json!({"stage": "qualified"})),
        // Carl arrived yesterday: his sale today lands on yesterday.
        ("carl", json!({"stage": "won", "revenueCents": 1_000})),
    ] {
        let mut body = body;
        body["changeId"] = json!(format!("{key}-move"));
        body["occurredAt"] = json!(now);
        let (s, b) = h
            .call(
                "POST",
                &format!("/v1/sites/loja-x/leads/{key}/stage"),
                Some(body),
            )
            .await;
        assert_eq!(s, 200, "{b}");
    }
    let report = |q: String| {
        let path = format!("/v1/reports/daily?siteIds=loja-x&from={yesterday}&to={today}{q}");
        async move { h.call("GET", &path, None).await }
    };
    let site_spend = |day: i64| async move {
        let mut total = 0;
        for acct in [LOJA_PRINCIPAL, LOJA_MANAUS] {
            total += h
                .aws()
                .day_sums("loja-x", acct, day, day)
                .await
                .unwrap()
                .values()
                .map(|f| f.spend_cents)
                .sum::<i64>();
        }
        total
    };
    let (s, r) = report(String::new()).await;
    assert_eq!(s, 200, "{r}");
    let days = r["days"].as_array().unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(
        (
            days[0]["leads"].clone(),
            days[0]["qualified"].clone(),
            days[0]["won"].clone(),
            days[0]["revenueCents"].clone()
        ),
        (json!(1), json!(1), json!(1), json!(1_000)),
        "{r}"
    );
    assert_eq!(
        (
            days[1]["leads"].clone(),
            days[1]["qualified"].clone(),
            days[1]["won"].clone(),
            days[1]["revenueCents"].clone()
        ),
        (json!(2), json!(2), json!(1), json!(45_990)),
        "{r}"
    );
    assert_eq!(days[0]["spendCents"], site_spend(yesterday).await);
    assert_eq!(days[1]["spendCents"], site_spend(today).await);
    assert_eq!(
        (r["spendCurrency"].clone(), r["currencyMismatch"].clone()),
        (json!("BRL"), json!(false))
    );
    // Organic leads bought nothing: no spend.
    let (_, r) = report("&origin=organic".into()).await;
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(1), Value::Null),
        "{r}"
    );
    let (_, r) = report("&origin=paid".into()).await;
    assert_eq!(
        (r["days"][1]["won"].clone(), r["days"][0]["leads"].clone()),
        (json!(1), json!(0)),
        "{r}"
    );
    // Paid leads: the costs and the return the spend bought; the totals
    // (organic included) carry none.
    let (_, r) = report("&origin=paid".into()).await;
    let spend_today = site_spend(today).await;
    let paid = &r["days"][1];
    assert_eq!(
        paid["costPerLeadCents"], spend_today,
        "one paid lead today: {r}"
    );
    assert_eq!(paid["costPerSaleCents"], spend_today);
    let ros = 45_990.0 / spend_today as f64;
    assert!(
        (paid["returnOnSpend"].as_f64().unwrap() - ros).abs() < 1e-9,
        "{r}"
    );
    let (_, all) = report(String::new()).await;
    assert!(all["days"][1]["costPerLeadCents"].is_null(), "{all}");
    // One ad: its leads and its own spend.
    let (_, r) = report(format!("&adId={ad}")).await;
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    let ad_today: i64 = rows
        .iter()
        .filter(|x| x.ad_id == ad && x.day_start == today)
        .map(|x| x.figures.spend_cents)
        .sum();
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(1), json!(ad_today)),
        "{r}"
    );
    // Both filters, or a range past 92 days: 400.
    let (s, e) = report(format!("&adId={ad}&origin=paid")).await;
    assert_eq!((s, code(&e)), (400, "INVALID_ARGUMENT"));
    let (s, _) = h
        .call(
            "GET",
            &format!(
                "/v1/reports/daily?siteIds=loja-x&from={}&to={today}",
                today - 92 * 86_400_000
            ),
            None,
        )
        .await;
    assert_eq!(s, 400);
    // Two currencies never sum.
    let (_, r) = h
        .call(
            "GET",
            &format!("/v1/reports/daily?siteIds=loja-x,pet-mania&from={yesterday}&to={today}"),
            None,
        )
        .await;
    assert_eq!(
        (
            r["currencyMismatch"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(true), Value::Null),
        "{r}"
    );
    // A removed lead leaves its cohort.
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/leads/ana", None).await;
    assert_eq!(s, 200);
    let (_, r) = report(String::new()).await;
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["won"].clone(),
            r["days"][1]["revenueCents"].clone()
        ),
        (json!(1), json!(0), json!(0)),
        "{r}"
    );
}

/// The ad rows of a leads report, flattened from its campaign tree.
fn report_ads(r: &Value) -> Vec<Value> {
    r["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["adsets"].as_array().unwrap().clone())
        .flat_map(|s| s["ads"].as_array().unwrap().clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leads_report_puts_spend_next_to_leads() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-z",
            Some(json!({"name": "Loja Z", "currency": "BRL"})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let ad = adtrail_fake_meta::sample_accounts()
        .into_iter()
        .find(|a| a.id == LOJA_PRINCIPAL)
        .unwrap()
        .ads[0]
        .id
        .clone();
    let now = h.now();
    let today = now - now.rem_euclid(86_400_000);
    let from = today - 6 * 86_400_000;
    for (site, key, at, origin) in [
        ("loja-x", "ana", now, "ctwa_ad"),
        ("loja-x", "carl", now - 86_400_000, "ctwa_ad"),
        ("loja-x", "bia", now, "organic"),
        ("loja-z", "zeca", now, "organic"),
    ] {
        let mut body = json!({"leadKey": key, "changeId": format!("{key}-new"), "occurredAt": at, "origin": origin});
        if origin == "ctwa_ad" {
            body["adId"] = json!(ad);
        }
        let (s, b) = h
            .call("POST", &format!("/v1/sites/{site}/leads"), Some(body))
            .await;
        assert_eq!(s, 201, "{b}");
    }
    let (s, b) = h
        .call(
            "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            Some(json!({"changeId": "ana-won", "occurredAt": now, "stage": "won", "revenueCents": 45_990})),
        )
        .await;
    assert_eq!(s, 200, "{b}");

    // What the stored rows say, to compare with.
    let mut site_spend = (0, 0, 0);
    let mut by_ad: std::collections::BTreeMap<String, i64> = Default::default();
    for acct in [LOJA_PRINCIPAL, LOJA_MANAUS] {
        for (_, f) in h.aws().day_sums("loja-x", acct, from, today).await.unwrap() {
            site_spend.0 += f.spend_cents;
            site_spend.1 += f.impressions;
            site_spend.2 += f.clicks;
        }
        for r in h.all_rows("loja-x", acct).await {
            if (from..=today).contains(&r.day_start) {
                *by_ad.entry(r.ad_id).or_default() += r.figures.spend_cents;
            }
        }
    }
    assert!(site_spend.0 > 0, "the sample spends in the last week");
    let path = |sites: &str| format!("/v1/reports/leads?siteIds={sites}&from={from}&to={today}");

    let (s, r) = h.call("GET", &path("loja-x"), None).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        (
            r["totals"]["leads"].clone(),
            r["totals"]["won"].clone(),
            r["totals"]["revenueCents"].clone(),
            r["totals"]["spendCents"].clone(),
            r["totals"]["impressions"].clone(),
            r["totals"]["clicks"].clone(),
        ),
        (
            json!(3),
            json!(1),
            json!(45_990),
            json!(site_spend.0),
            json!(site_spend.1),
            json!(site_spend.2)
        ),
        "{r}"
    );
    assert_eq!(
        (
            r["spendCurrency"].clone(),
            r["currencyMismatch"].clone(),
            r["spendIncomplete"].clone()
        ),
        (json!("BRL"), json!(false), json!(false))
    );
    assert!(
        r["totals"].get("costPerLeadCents").is_none(),
        "totals include organic leads: {r}"
    );
    let origin = |name: &str| {
        r["origins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["origin"] == name)
            .cloned()
            .unwrap()
    };
    let paid = origin("ctwa_ad");
    assert_eq!(
        (
            paid["leads"].clone(),
            paid["spendCents"].clone(),
            paid["costPerLeadCents"].clone()
        ),
        (json!(2), json!(site_spend.0), json!((site_spend.0 + 1) / 2)),
        "{r}"
    );
    let organic = origin("organic");
    assert_eq!(
        (
            organic["leads"].clone(),
            organic["spendCents"].clone(),
            organic["costPerLeadCents"].clone()
        ),
        (json!(1), Value::Null, Value::Null),
        "{r}"
    );
    // Every ad that spent is listed, with or without leads; the tree sums
    // to the site's spend.
    let ads = report_ads(&r);
    let listed: std::collections::BTreeSet<String> = ads
        .iter()
        .map(|a| a["adId"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: std::collections::BTreeSet<String> = by_ad.keys().cloned().collect();
    expected.insert(ad.clone());
    assert_eq!(listed, expected);
    let tree_spend: i64 = r["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spendCents"].as_i64().unwrap())
        .sum();
    assert_eq!(tree_spend, site_spend.0);
    let burner = ads
        .iter()
        .find(|a| a["leads"] == 0 && a["spendCents"].as_i64().unwrap_or(0) > 0)
        .expect("an ad that spent without bringing a lead");
    assert!(burner["costPerLeadCents"].is_null(), "{burner}");
    let row = ads.iter().find(|a| a["adId"] == ad.as_str()).unwrap();
    let ad_spend = by_ad.get(&ad).copied().unwrap_or(0);
    assert_eq!(
        (
            row["siteId"].clone(),
            row["leads"].clone(),
            row["won"].clone(),
            row["spendCents"].clone()
        ),
        (json!("loja-x"), json!(2), json!(1), json!(ad_spend)),
        "{row}"
    );
    assert!(
        row["adStatus"].is_string() && row["creativeType"].is_string(),
        "{row}"
    );
    if ad_spend > 0 {
        assert_eq!(
            row["returnOnSpend"].as_f64().unwrap(),
            45_990.0 / ad_spend as f64
        );
    }
    // The thumbnail comes from the private bucket through a signed URL.
    let url = row["thumbnailUrl"].as_str().expect("a thumbnail URL");
    assert!(url.contains("X-Amz-Signature="), "{url}");
    let got = reqwest::get(url).await.unwrap();
    assert_eq!(got.status(), 200);
    let key = adtrail_store::blobs::thumbnail_key("loja-x", &ad);
    assert_eq!(
        got.bytes().await.unwrap().to_vec(),
        h.aws().get_thumbnail(&key).await.unwrap()
    );
    let site = &r["bySite"][0];
    assert_eq!(
        (
            site["siteId"].clone(),
            site["leads"].clone(),
            site["paid"]["leads"].clone(),
            site["spendCents"].clone(),
            site["paid"]["costPerSaleCents"].clone(),
        ),
        (
            json!("loja-x"),
            json!(3),
            json!(2),
            json!(site_spend.0),
            json!(site_spend.0)
        ),
        "{site}"
    );

    // Two currencies: no spend is summed, each site keeps its own; a site
    // with no account is unknown, not zero; request order is kept.
    let (s, r) = h.call("GET", &path("pet-mania,loja-x,loja-z"), None).await;
    assert_eq!(s, 200, "{r}");
    let sites: Vec<&str> = r["bySite"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["siteId"].as_str().unwrap())
        .collect();
    assert_eq!(sites, ["pet-mania", "loja-x", "loja-z"]);
    assert_eq!(
        (
            r["currencyMismatch"].clone(),
            r["spendCurrency"].clone(),
            r["totals"]["spendCents"].clone(),
            r["totals"]["leads"].clone()
        ),
        (json!(true), Value::Null, Value::Null, json!(4)),
        "{r}"
    );
    assert_eq!(r["bySite"][0]["spendCurrency"], "USD");
    assert!(r["bySite"][0]["spendCents"].as_i64().unwrap() > 0);
    assert_eq!(r["bySite"][1]["spendCents"], json!(site_spend.0));
    assert_eq!(
        (
            r["bySite"][2]["spendCents"].clone(),
            r["bySite"][2]["spendCurrency"].clone(),
            r["bySite"][2]["currencyMismatch"].clone(),
            r["bySite"][2]["leads"].clone()
        ),
        (Value::Null, Value::Null, json!(false), json!(1))
    );
    let ads = report_ads(&r);
    assert!(
        ads.iter()
            .all(|a| a["spendCents"].is_null() && a["costPerLeadCents"].is_null())
    );
    assert!(
        ads.iter()
            .any(|a| a["impressions"].as_i64().unwrap_or(0) > 0)
    );
    // A site with no account alone: spend unknown everywhere.
    let (_, r) = h.call("GET", &path("loja-z"), None).await;
    assert_eq!(
        (
            r["totals"]["spendCents"].clone(),
            r["spendCurrency"].clone(),
            r["campaigns"].clone()
        ),
        (Value::Null, Value::Null, json!([])),
        "{r}"
    );

    // Past the per-ad budget the tree's spend is unknown and the totals stay
    // exact; past the day budget, every spend; past the rollup budget the
    // report fails rather than count short.
    let limits = |rollup_rows, day_rows, ad_rows| adtrail_api::ReportLimits {
        rollup_rows,
        day_rows,
        ad_rows,
    };
    let (s, r) = h
        .call_with_limits(limits(12_000, 12_000, 5), "GET", &path("loja-x"))
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        (
            r["spendIncomplete"].clone(),
            r["totals"]["spendCents"].clone()
        ),
        (json!(true), json!(site_spend.0))
    );
    assert!(
        report_ads(&r).iter().all(|a| a["spendCents"].is_null()),
        "{r}"
    );
    let (_, r) = h
        .call_with_limits(limits(12_000, 3, 12_000), "GET", &path("loja-x"))
        .await;
    assert_eq!(
        (
            r["spendIncomplete"].clone(),
            r["totals"]["spendCents"].clone(),
            r["bySite"][0]["spendCents"].clone(),
            r["totals"]["leads"].clone()
        ),
        (json!(true), Value::Null, Value::Null, json!(3)),
        "{r}"
    );
    let (s, e) = h
        .call_with_limits(limits(2, 12_000, 12_000), "GET", &path("loja-x"))
        .await;
    assert_eq!((s, code(&e)), (422, "REPORT_INCOMPLETE"), "{e}");

    // Bad ranges and lists name the field.
    for (q, field) in [
        (
            format!(
                "siteIds=loja-x&from={}&to={today}",
                today - 366 * 86_400_000
            ),
            "to",
        ),
        (
            format!("siteIds=loja-x,loja-x&from={from}&to={today}"),
            "siteIds",
        ),
        (
            format!("siteIds=loja-x&from={}&to={today}", from + 1),
            "from",
        ),
        (
            format!("siteIds=loja-x&from={from}&to={today}&adId=1"),
            "adId",
        ),
    ] {
        let (s, e) = h.call("GET", &format!("/v1/reports/leads?{q}"), None).await;
        assert_eq!((s, code(&e)), (400, "INVALID_ARGUMENT"), "{q}: {e}");
        assert!(
            e["error"]["message"].as_str().unwrap().starts_with(field),
            "{e}"
        );
    }
}
