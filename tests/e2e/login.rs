//! Facebook Login for Business end to end: the local stack (the app's id and
//! secret in moto's Secrets Manager), the API, the fake Meta's
//! `/oauth/access_token` and `/debug_token`, and the sweeper that flags
//! tokens about to expire.

use adtrail_domain::time::DAY_MS;
use adtrail_fake_meta::{FAKE_APP_SECRET, ME_ID};
use adtrail_tests::*;
use serde_json::{Value, json};

const REDIRECT: &str = "https://app.example.com/meta/retorno";

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

async fn login(h: &Harness, owner: &str, login_code: &str) -> (u16, Value) {
    h.call(
        "POST",
        &format!("/v1/meta/connections/{owner}/login"),
        Some(json!({"code": login_code, "redirectUri": REDIRECT})),
    )
    .await
}

/// The paths of the fake's requests so far, with their query strings.
fn meta_calls(h: &Harness) -> Vec<String> {
    h.fake()
        .requests()
        .iter()
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_trades_the_code_and_records_the_tokens_life() {
    let started = Harness::start().await;
    let h = &started;
    let mut answers = vec![];
    a_system_user_token_is_kept_as_it_is(h, &mut answers).await;
    a_user_token_is_traded_for_a_long_lived_one(h, &mut answers).await;
    the_sweeper_flags_a_token_about_to_expire(h, &mut answers).await;
    a_failed_trade_and_a_refused_code(h, &mut answers).await;
    bad_input_names_the_field_and_calls_nobody(h).await;
    // No answer carries a token, the code or the app's secret.
    for a in &answers {
        let text = a.to_string();
        for secret in [
            "EAAS-",
            "EAAU-",
            "EAAL-",
            FAKE_APP_SECRET,
            "user-token",
            "sys-code",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

/// A system user token: the answer says no lifetime, `/debug_token` says
/// it never ends; kept as it is. A code works once.
async fn a_system_user_token_is_kept_as_it_is(h: &Harness, answers: &mut Vec<Value>) {
    let now = h.now();
    let (s, b) = login(h, "agency", "sys-code-1").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["adAccounts"].as_array().unwrap().len(), 4, "{b}");
    assert_eq!(
        (
            b["expiresAt"].clone(),
            b["expiringSoon"].clone(),
            b["authorizedBy"]["id"].clone(),
            b["lastError"].clone()
        ),
        (Value::Null, json!(false), json!(ME_ID), Value::Null)
    );
    let calls = meta_calls(h);
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("POST /v25.0/oauth/access_token?"))
    );
    assert!(
        calls
            .iter()
            .any(|c| c.starts_with("GET /v25.0/debug_token?"))
    );
    assert!(
        calls
            .iter()
            .all(|c| !c.contains("sys-code-1") && !c.contains(FAKE_APP_SECRET)),
        "the code and the app secret travel in the form body only: {calls:?}"
    );
    answers.push(b);
    let (s, c) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(s, 200);
    assert_eq!(
        (c["authorizedAt"].clone(), c["expiresAt"].clone()),
        (json!(now), Value::Null)
    );
    answers.push(c);

    // A code works once.
    let (s, e) = login(h, "agency", "sys-code-1").await;
    assert_eq!((s, code(&e)), (422, "META_TOKEN_INVALID"), "{e}");
    answers.push(e);
}

/// A user token (2 hours) is traded for a long-lived one (60 days); both
/// answers gave their lifetime, so no `/debug_token`.
async fn a_user_token_is_traded_for_a_long_lived_one(h: &Harness, answers: &mut Vec<Value>) {
    let now = h.now();
    h.fake().clear_requests();
    let (s, b) = login(h, "user", "abc-user-token-1").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (
            b["expiresAt"].clone(),
            b["expiringSoon"].clone(),
            b["lastError"].clone()
        ),
        (json!(now + 60 * DAY_MS), json!(false), Value::Null)
    );
    let calls = meta_calls(h);
    assert_eq!(
        calls
            .iter()
            .filter(|c| c.contains("oauth/access_token"))
            .count(),
        2,
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.contains("debug_token")),
        "{calls:?}"
    );
    // The stored token is the long-lived one: it is what /me saw.
    let me = h
        .fake()
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/me"))
        .unwrap();
    assert!(me.authorization.unwrap().starts_with("Bearer EAAL-"));
    answers.push(b);
}

/// The sweeper flags the token once it has under 7 days left, and tells
/// the bus once; a new login starts the clock again.
async fn the_sweeper_flags_a_token_about_to_expire(h: &Harness, answers: &mut Vec<Value>) {
    let tap = h.tap_bus().await;
    h.runner().sweeper.sweep().await.unwrap();
    let (_, c) = h.call("GET", "/v1/meta/connections/user", None).await;
    assert_eq!(c["expiringSoon"], false);
    h.clock.advance(54 * DAY_MS);
    let report = h.runner().sweeper.sweep().await.unwrap();
    assert_eq!(report.tokens_expiring, 1);
    let (_, c) = h.call("GET", "/v1/meta/connections/user", None).await;
    assert_eq!(c["expiringSoon"], true, "{c}");
    // Flagged once, out of the index.
    assert_eq!(h.runner().sweeper.sweep().await.unwrap().tokens_expiring, 0);
    let expiring: Vec<_> = tap
        .take(h)
        .await
        .into_iter()
        .filter(|e| e.detail_type == "ConnectionExpiringSoon")
        .map(|e| e.detail)
        .collect();
    assert_eq!(expiring.len(), 1, "{expiring:?}");
    assert_eq!(expiring[0]["ownerKey"], "user");
    assert_eq!(expiring[0]["expiresAt"], c["expiresAt"]);
    // A new login starts the clock again.
    let (_, b) = login(h, "user", "abc-user-token-2").await;
    assert_eq!(b["expiringSoon"], false, "{b}");
    answers.push(b);
}

/// The long-lived trade fails: the login stands with the short token,
/// expiring soon at once, and says why (nothing of Meta's answer). A
/// refused code: 422, nothing stored.
async fn a_failed_trade_and_a_refused_code(h: &Harness, answers: &mut Vec<Value>) {
    h.fake().tune(|k| k.fail_token_exchange = true);
    let now = h.now();
    let (s, b) = login(h, "brief", "xyz-user-token-3").await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(
        (b["expiresAt"].clone(), b["expiringSoon"].clone()),
        (json!(now + 2 * 3_600_000), json!(true))
    );
    assert!(
        b["lastError"]
            .as_str()
            .unwrap()
            .starts_with("TOKEN_EXCHANGE_FAILED: "),
        "{b}"
    );
    let (_, c) = h.call("GET", "/v1/meta/connections/brief", None).await;
    assert_eq!(
        (c["expiringSoon"].clone(), c["lastError"].clone()),
        (json!(true), b["lastError"].clone())
    );
    answers.push(b);
    answers.push(c);

    // A refused code: 422, nothing stored.
    let (s, e) = login(h, "nobody", "an-invalid-code").await;
    assert_eq!((s, code(&e)), (422, "META_TOKEN_INVALID"), "{e}");
    assert!(
        h.store()
            .connections()
            .get_connection("nobody")
            .await
            .unwrap()
            .is_none()
    );
    answers.push(e);
}

/// Bad input names the field and calls nobody; http is fine on this
/// machine.
async fn bad_input_names_the_field_and_calls_nobody(h: &Harness) {
    h.fake().clear_requests();
    for (body, field) in [
        (
            json!({"code": "c1", "redirectUri": "http://app.example.com/cb"}),
            "redirectUri",
        ),
        (
            json!({"code": "c1", "redirectUri": "https://a.example/cb#frag"}),
            "redirectUri",
        ),
        (json!({"code": "", "redirectUri": REDIRECT}), "code"),
        (json!({"code": "a b", "redirectUri": REDIRECT}), "code"),
        (json!({"code": "c1"}), "redirectUri"),
        (
            json!({"code": "c1", "redirectUri": REDIRECT, "state": "x"}),
            "state",
        ),
    ] {
        let (s, e) = h
            .call(
                "POST",
                "/v1/meta/connections/agency/login",
                Some(body.clone()),
            )
            .await;
        assert_eq!((s, code(&e)), (400, "INVALID_ARGUMENT"), "{body}: {e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(field),
            "{e}"
        );
    }
    assert!(h.fake().requests().is_empty());
    // http is fine on this machine.
    let (s, b) = h
        .call(
            "POST",
            "/v1/meta/connections/local/login",
            Some(json!({"code": "local-1", "redirectUri": "http://localhost:5173/meta/retorno"})),
        )
        .await;
    assert_eq!(s, 200, "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_app_the_login_is_unavailable_and_a_pasted_token_still_works() {
    let started = Harness::start().await;
    let h = &started;
    // No secret named: the login is off.
    let mut names = h.store().names.clone();
    names.meta_app_secret = None;
    let api = adtrail_api::Api {
        store: h.store().with_names(names),
        ..h.runner().api.clone()
    };
    let body = json!({"code": "c-1", "redirectUri": REDIRECT}).to_string();
    let (s, e) = call_handler(
        &api,
        "POST",
        "/v1/meta/connections/agency/login",
        body.as_bytes(),
    )
    .await;
    assert_eq!((s, code(&e)), (422, "META_LOGIN_UNAVAILABLE"), "{e}");
    assert!(h.fake().requests().is_empty(), "Meta was not called");

    // Meta refuses the app's secret: unavailable too, and never echoed.
    let secret_id = h.store().names.meta_app_secret.clone().unwrap();
    h.store()
        .secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string(
            json!({"appId": adtrail_fake_meta::FAKE_APP_ID, "appSecret": "wrong-secret-42"})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let (s, e) = login(h, "agency", "c-2").await;
    assert_eq!((s, code(&e)), (422, "META_LOGIN_UNAVAILABLE"), "{e}");
    assert!(!e.to_string().contains("wrong-secret-42"));
    // A secret of another shape: the same.
    h.store()
        .secrets
        .put_secret_value()
        .secret_id(&secret_id)
        .secret_string("not json")
        .send()
        .await
        .unwrap();
    let (s, e) = login(h, "agency", "c-3").await;
    assert_eq!((s, code(&e)), (422, "META_LOGIN_UNAVAILABLE"), "{e}");
    assert!(
        h.store()
            .connections()
            .get_connection("agency")
            .await
            .unwrap()
            .is_none()
    );

    // The pasted token still connects, with no known end.
    let c = h.connect(TOKEN).await;
    assert_eq!(c["status"], "active");
    let (_, c) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(
        (c["expiresAt"].clone(), c["expiringSoon"].clone()),
        (Value::Null, json!(false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dashboard_logs_in_as_its_own_owner_only() {
    let started = Harness::start().await;
    let h = &started;
    let keys = &h.app.local.keys;
    let dash = keys.sign(json!({"sub": "d1", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let body = json!({"code": "dash-code", "redirectUri": REDIRECT}).to_string();
    let (s, b) = h
        .call_as(
            Some(&dash),
            "POST",
            "/v1/meta/connections/me/login",
            Some(body.clone()),
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["ownerKey"], "dashboard:d1");
    let (s, e) = h
        .call_as(
            Some(&dash),
            "POST",
            "/v1/meta/connections/agency/login",
            Some(body),
        )
        .await;
    assert_eq!((s, code(&e)), (403, "FORBIDDEN"), "{e}");
}
