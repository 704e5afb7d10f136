//! Authentication, scopes and grants: every route refuses a missing, expired,
//! foreign or misaddressed token, and a dashboard reads and changes only its
//! granted sites.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message};

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

#[tokio::test]
async fn dashboards_read_only_their_granted_sites() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    a_reader_reads_its_grant_and_configures_nothing(h).await;
    a_connection_shows_links_outside_the_grant_without_their_site(h).await;
}

/// A reader reads its granted site, never another (named nowhere in the
/// refusal), and configures nothing.
async fn a_reader_reads_its_grant_and_configures_nothing(h: &Harness) {
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
}

/// A connection listing shows a link outside the grant without its site:
/// another owner's connection is refused; its own (the same agency token)
/// shows the accounts linked outside its grant without naming the site.
async fn a_connection_shows_links_outside_the_grant_without_their_site(h: &Harness) {
    let keys = &h.app.local.keys;
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
