//! Any identity provider, and a browser: the scope names and the sites
//! claim are the stack's parameters (Cognito's `adtrail/host` and a claim a
//! pre-token-generation trigger adds, through the real API binary); CORS
//! comes from `AllowedOrigins`, a preflight passes no authorizer, and the
//! local stack answers it as API Gateway does; `make local` mints a
//! dashboard's token.

use adtrail_local::http::{CORS_HEADERS, CORS_MAX_AGE, CORS_METHODS};
use adtrail_local::template::{Template, default_path};
use adtrail_tests::runtime::{Function, binary, stack_env};
use adtrail_tests::*;
use serde_json::{Value, json};
use serde_yaml_ng::Value as Yaml;

fn template() -> Template {
    Template::load(&default_path()).expect("template.yaml")
}

fn refers(v: &Yaml) -> Option<&str> {
    match v {
        Yaml::Tagged(t) if t.tag == "!Ref" => t.value.as_str(),
        _ => None,
    }
}

#[test]
fn the_scopes_the_sites_claim_and_the_origins_are_the_stacks_parameters() {
    let t = template();
    let p = &t.raw["Parameters"];
    assert_eq!(p["ScopePrefix"]["Default"].as_str(), Some("adtrail:"));
    assert_eq!(p["SitesClaim"]["Default"].as_str(), Some("sites"));
    assert_eq!(p["AllowedOrigins"]["Default"].as_str(), Some(""));
    assert_eq!(
        p["JwtAudience"]["Type"].as_str(),
        Some("CommaDelimitedList"),
        "a host's servers and its dashboard may be two app clients"
    );
    let r = &t.raw["Resources"];
    let env = &r["ApiFunction"]["Properties"]["Environment"]["Variables"];
    assert_eq!(refers(&env["SCOPE_PREFIX"]), Some("ScopePrefix"));
    assert_eq!(refers(&env["SITES_CLAIM"]), Some("SitesClaim"));
    let api = &r["HttpApi"]["Properties"];
    assert_eq!(
        refers(&api["Auth"]["Authorizers"]["Jwt"]["JwtConfiguration"]["audience"]),
        Some("JwtAudience")
    );
    // CORS only when origins are given, with what the local stack answers.
    let Yaml::Tagged(cors) = &api["CorsConfiguration"] else {
        panic!("an !If on AllowedOrigins")
    };
    assert_eq!(cors.tag, "!If");
    assert_eq!(cors.value[0].as_str(), Some("HasAllowedOrigins"));
    let on = &cors.value[1];
    let list = |v: &Yaml| -> Vec<String> {
        v.as_sequence()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(list(&on["AllowMethods"]), CORS_METHODS);
    assert_eq!(list(&on["AllowHeaders"]), CORS_HEADERS);
    assert_eq!(on["MaxAge"].as_u64(), Some(u64::from(CORS_MAX_AGE)));
    assert_eq!(refers(&cors.value[2]), Some("AWS::NoValue"));
    // The preflight reaches the function outside the authorizer.
    let preflight = &r["ApiFunction"]["Properties"]["Events"]["Preflight"]["Properties"];
    assert_eq!(preflight["Method"].as_str(), Some("OPTIONS"));
    assert_eq!(preflight["Path"].as_str(), Some("/{proxy+}"));
    assert_eq!(preflight["Auth"]["Authorizer"].as_str(), Some("NONE"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_on_an_allowed_origin_preflights_without_a_token_and_reads() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    *h.app.local.allowed_origins.write().unwrap() =
        adtrail_local::http::origins("https://painel.example.com, http://localhost:5173");
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", h.app.api_url);
    let preflight = |origin: &'static str| {
        http.request(reqwest::Method::OPTIONS, url("/v1/sites/loja-x"))
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
    };
    let ok = preflight("https://painel.example.com").await.unwrap();
    assert_eq!(ok.status(), 204, "no token, no 401");
    assert_eq!(
        header(&ok, "access-control-allow-origin").as_deref(),
        Some("https://painel.example.com")
    );
    assert_eq!(
        header(&ok, "access-control-allow-headers").as_deref(),
        Some("authorization,content-type")
    );
    assert!(header(&ok, "access-control-allow-methods").is_some_and(|m| m.contains("DELETE")));
    assert_eq!(
        header(&ok, "access-control-max-age").as_deref(),
        Some("600")
    );
    // Another origin gets no leave: the browser stops there.
    let foreign = preflight("https://evil.example.net").await.unwrap();
    assert_eq!(foreign.status(), 204);
    assert!(header(&foreign, "access-control-allow-origin").is_none());

    minted_tokens_read_within_their_grant(&h, &http).await;
    a_bad_mint_names_its_field(&h, &http).await;
}

/// A response header as text.
fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
}

/// The dashboard's developer mints a token from the local stack: it reads
/// within its grant, from an allowed origin; without a token, an actual
/// request still meets the authorizer.
async fn minted_tokens_read_within_their_grant(h: &Harness, http: &reqwest::Client) {
    let url = |path: &str| format!("{}{path}", h.app.api_url);
    let minted: Value = http
        .post(url("/_local/token"))
        .json(&json!({"sub": "dev-1", "scope": "adtrail:read", "sites": ["loja-x"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = minted["token"].as_str().expect("a token");
    let read = http
        .get(url("/v1/sites/loja-x"))
        .bearer_auth(token)
        .header("origin", "http://localhost:5173")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(
        header(&read, "access-control-allow-origin").as_deref(),
        Some("http://localhost:5173")
    );
    // As API Gateway does, every answer names its request, the
    // authorizer's refusals too: the id a caller quotes.
    let id = header(&read, "apigw-requestid").expect("the request's id");
    let refused = http.get(url("/v1/sites/loja-x")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let other = header(&refused, "apigw-requestid").expect("a refusal's id too");
    assert!(!id.is_empty() && id != other, "{id} {other}");
    let (status, body) = h
        .call_as(Some(token), "GET", "/v1/sites/loja-y", None)
        .await;
    assert_eq!(status, 403, "outside its grant: {body}");
    // Without a token, an actual request still meets the authorizer.
    let (status, _) = h.call_as(None, "GET", "/v1/sites/loja-x", None).await;
    assert_eq!(status, 401);
}

/// A bad mint names its field.
async fn a_bad_mint_names_its_field(h: &Harness, http: &reqwest::Client) {
    let url = |path: &str| format!("{}{path}", h.app.api_url);
    for (ask, field) in [
        (json!({"scope": "adtrail:read"}), "sub"),
        (json!({"sub": "d"}), "scope"),
        (
            json!({"sub": "d", "scope": "adtrail:read", "sites": "loja-x"}),
            "sites",
        ),
    ] {
        let bad = http
            .post(url("/_local/token"))
            .json(&ask)
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
        let body: Value = bad.json().await.unwrap();
        assert_eq!(body["error"]["field"], field);
    }
}

/// An API Gateway event carrying a Cognito access token's claims as the
/// authorizer passes them: no `aud`, the app client in `client_id`, the
/// resource server's scopes, and the sites a pre-token-generation trigger
/// added.
fn cognito_event(
    method: &str,
    path: &str,
    scope: &str,
    sites: Option<&str>,
    body: Option<Value>,
) -> Value {
    let mut claims: std::collections::HashMap<String, String> = [
        ("sub", "3f1c2a9e-cognito-user"),
        (
            "iss",
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Example",
        ),
        ("client_id", "5app0client0id"),
        ("token_use", "access"),
        ("scope", scope),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    if let Some(sites) = sites {
        claims.insert("adtrail_sites".into(), sites.to_owned());
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    adtrail_local::http::api_gateway_event(
        &axum::http::Method::from_bytes(method.as_bytes()).unwrap(),
        &path.parse::<axum::http::Uri>().unwrap(),
        &headers,
        body.as_bytes(),
        Some(&claims),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cognito_access_tokens_work_once_the_stack_names_its_scopes_and_claim() {
    let h = Harness::start().await;
    let mut env = stack_env(&h);
    env.push(("SCOPE_PREFIX".into(), "adtrail/".into()));
    env.push(("SITES_CLAIM".into(), "adtrail_sites".into()));
    let api = Function::start(binary("adtrail-api"), &env).await;
    let status = |answer: &Value| answer["statusCode"].as_i64().unwrap_or(0);
    let body = |answer: &Value| -> Value {
        serde_json::from_str(answer["body"].as_str().unwrap_or("null")).unwrap_or(Value::Null)
    };
    // The host's servers: a client-credentials token with adtrail/host.
    for site in ["loja-x", "loja-y"] {
        let put = api
            .invoke(cognito_event(
                "PUT",
                &format!("/v1/sites/{site}"),
                "adtrail/host",
                None,
                Some(json!({"name": site, "currency": "BRL", "country": "BR"})),
            ))
            .await
            .unwrap();
        assert!(status(&put) < 300, "{put}");
    }
    // A dashboard user: adtrail/read, and the sites the trigger added (an
    // array reaches the function as "[a b]").
    let list = api
        .invoke(cognito_event(
            "GET",
            "/v1/sites",
            "adtrail/read",
            Some("[loja-x]"),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(status(&list), 200, "{list}");
    let listed = body(&list);
    let sites: Vec<&str> = listed["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["siteId"].as_str())
        .collect();
    assert_eq!(sites, ["loja-x"], "only its grant");
    let other = api
        .invoke(cognito_event(
            "GET",
            "/v1/sites/loja-y",
            "adtrail/read",
            Some("[loja-x]"),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(status(&other), 403);
    // The default spelling means nothing to this stack.
    let default = api
        .invoke(cognito_event(
            "GET",
            "/v1/sites",
            "adtrail:host",
            None,
            None,
        ))
        .await
        .unwrap();
    assert_eq!(status(&default), 401, "{default}");
    assert_eq!(body(&default)["error"]["code"], "UNAUTHENTICATED");
    api.stop().await;
}
