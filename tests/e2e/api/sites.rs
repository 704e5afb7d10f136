//! Sites and reads: bad input is a 400 naming the field and writes nothing;
//! reads check their ranges and site lists; sites are listed in the caller's
//! grant and read one by one.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::{code, message};

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
        // Three letters, but no currency: Meta would refuse every Purchase.
        (
            "/v1/sites/s1",
            r#"{"name":"A","currency":"ZZZ"}"#.into(),
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
        h.store().sites().get_site("s1").await.unwrap().is_none(),
        "nothing was written"
    );
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

/// DynamoDB failing through every retry: the API answers a clear 503 the
/// caller may repeat, and nothing is half-written.
#[tokio::test]
async fn a_database_busy_through_every_retry_is_a_503_and_writes_nothing() {
    let h = Harness::start().await;
    let faults = &h.runner().stack.cloud.faults;
    faults.set_share(1.0);
    let (s, b) = h
        .call(
            "PUT",
            "/v1/sites/loja-x",
            Some(json!({"name": "Loja X", "currency": "BRL", "country": "BR"})),
        )
        .await;
    faults.set_share(0.0);
    assert_eq!((s, code(&b)), (503, "STORE_UNAVAILABLE"), "{b}");
    assert!(
        !b.to_string().contains("Exception"),
        "no DynamoDB words: {b}"
    );
    assert!(
        h.store()
            .sites()
            .get_site("loja-x")
            .await
            .unwrap()
            .is_none(),
        "nothing was written"
    );
}

#[tokio::test]
async fn sites_are_listed_in_the_callers_grant_and_read_one_by_one() {
    let h = Harness::start().await;
    for (site, currency) in [("pet-mania", "USD"), ("loja-x", "BRL"), ("loja-y", "BRL")] {
        h.put_site(site, currency).await;
    }
    // Again: listed once.
    h.put_site("loja-x", "BRL").await;
    let ids = |v: &Value| -> Vec<String> {
        v["sites"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["siteId"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = h.expect(200, "GET", "/v1/sites", None).await;
    assert_eq!(ids(&all), ["loja-x", "loja-y", "pet-mania"]);
    assert_eq!(all["next"], Value::Null);
    let page = h.expect(200, "GET", "/v1/sites?limit=2", None).await;
    assert_eq!(ids(&page), ["loja-x", "loja-y"]);
    let rest = h
        .expect(200, "GET", "/v1/sites?after=loja-y&limit=2", None)
        .await;
    assert_eq!(ids(&rest), ["pet-mania"]);
    assert_eq!(rest["next"], Value::Null);
    let (s, _) = h.call("GET", "/v1/sites?limit=0", None).await;
    assert_eq!(s, 400);
    // A dashboard sees its grant only, and reads only those.
    let reader = h.app.local.keys.sign(
        json!({"sub": "r", "scope": "adtrail:read", "sites": ["pet-mania", "loja-y", "nope"]}),
    );
    let (s, mine) = h.call_as(Some(&reader), "GET", "/v1/sites", None).await;
    assert_eq!(s, 200);
    assert_eq!(
        ids(&mine),
        ["loja-y", "pet-mania"],
        "an unknown id is left out"
    );
    let one = h.expect(200, "GET", "/v1/sites/loja-x", None).await;
    assert_eq!(
        (one["siteId"].as_str(), one["currency"].as_str()),
        (Some("loja-x"), Some("BRL"))
    );
    let (s, _) = h
        .call_as(Some(&reader), "GET", "/v1/sites/loja-x", None)
        .await;
    assert_eq!(s, 403);
    let (s, b) = h.call("GET", "/v1/sites/nope", None).await;
    assert_eq!((s, b["error"]["code"].as_str()), (404, Some("NOT_FOUND")));
}
