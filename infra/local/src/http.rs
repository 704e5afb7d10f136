//! The local HTTP API: what API Gateway does in the cloud (verify the
//! RS256 bearer token, hand the function its claims in API Gateway's v2
//! event shape, add the CORS headers of the template's `CorsConfiguration`
//! for the origins allowed, answer 503 past its 30-second integration
//! timeout and 500 for a function that failed, timed out or answered past
//! Lambda's 6 MB), plus the local-only admin routes
//! `/_local/tick`, `/_local/clock` and `/_local/token`, which never exist
//! in the Lambda.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use lambda_http::RequestExt;
use serde_json::{Value, json};

use crate::jwt::DevKeys;
use crate::runner::Runner;

/// The local API's state.
pub struct Local {
    pub runner: Runner,
    pub keys: DevKeys,
    /// The browser origins allowed (the `AllowedOrigins` parameter):
    /// `ALLOWED_ORIGINS` at start, comma-separated.
    pub allowed_origins: RwLock<Vec<String>>,
}

/// The template's `CorsConfiguration`, which a template test keeps equal.
pub const CORS_METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "OPTIONS"];
pub const CORS_HEADERS: [&str; 2] = ["authorization", "content-type"];
pub const CORS_MAX_AGE: u32 = 600;

/// The origins in a comma-separated list (`AllowedOrigins`' form).
pub fn origins(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Serves the API on `addr` until the process ends.
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve(
    local: Arc<Local>,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = Router::new().fallback(handle).with_state(local);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((bound, task))
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn handle(
    State(local): State<Arc<Local>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match (method.as_str(), uri.path()) {
        ("POST", "/_local/tick") => match local.runner.tick().await {
            Ok(report) => json_response(StatusCode::OK, json!(report)),
            Err(e) => json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": e.to_string()}),
            ),
        },
        ("POST", "/_local/clock") => {
            let ask: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let moved = match (
                ask.get("advanceMs").and_then(Value::as_i64),
                ask.get("nowMs").and_then(Value::as_i64),
            ) {
                (Some(ms), None) => local.runner.advance(ms).await,
                (None, Some(ms)) => local.runner.set_clock(ms).await,
                _ => {
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        json!({"error": "give advanceMs or nowMs"}),
                    );
                }
            };
            match moved {
                Ok(now) => json_response(StatusCode::OK, json!({"nowMs": now})),
                Err(e) => json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"error": e.to_string()}),
                ),
            }
        }
        ("POST", "/_local/token") => mint_token(&local, &body),
        _ => {
            let mut answer = invoke_api(&local, &method, &uri, &headers, &body).await;
            let allowed = local
                .allowed_origins
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            add_cors(&allowed, &method, &headers, answer.headers_mut());
            answer
        }
    }
}

/// A dashboard's token for front-end work against `make local`:
/// `{sub, scope, sites}` signed with the local issuer's key.
fn mint_token(local: &Local, body: &[u8]) -> Response {
    let ask: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let bad = |field: &str, what: &str| {
        json_response(
            StatusCode::BAD_REQUEST,
            json!({"error": {"code": "INVALID_ARGUMENT", "field": field, "message": what}}),
        )
    };
    let Some(sub) = ask["sub"]
        .as_str()
        .filter(|s| !s.is_empty() && s.len() <= 200)
    else {
        return bad("sub", "a subject of 1 to 200 characters");
    };
    let Some(scope) = ask["scope"].as_str().filter(|s| !s.trim().is_empty()) else {
        return bad("scope", "space-separated scopes, e.g. \"adtrail:read\"");
    };
    let sites = match &ask["sites"] {
        Value::Null => vec![],
        Value::Array(items) if items.iter().all(Value::is_string) => items.clone(),
        _ => return bad("sites", "an array of site ids"),
    };
    let token = local
        .keys
        .sign(json!({"sub": sub, "scope": scope, "sites": sites}));
    json_response(StatusCode::OK, json!({"token": token}))
}

/// What API Gateway adds to an answer when CORS is configured: the
/// origin, when allowed; on a preflight, the methods, headers and how long
/// a browser may keep them.
pub fn add_cors(allowed: &[String], method: &Method, request: &HeaderMap, answer: &mut HeaderMap) {
    let Some(origin) = request.get("origin").and_then(|o| o.to_str().ok()) else {
        return;
    };
    let allow = if allowed.iter().any(|a| a == "*") {
        "*"
    } else if allowed.iter().any(|a| a == origin) {
        origin
    } else {
        return;
    };
    let Ok(allow) = HeaderValue::from_str(allow) else {
        return;
    };
    answer.insert("access-control-allow-origin", allow);
    answer.insert("vary", HeaderValue::from_static("origin"));
    if method == Method::OPTIONS && request.contains_key("access-control-request-method") {
        let list = |items: &[&str]| HeaderValue::from_str(&items.join(",")).expect("static");
        answer.insert("access-control-allow-methods", list(&CORS_METHODS));
        answer.insert("access-control-allow-headers", list(&CORS_HEADERS));
        answer.insert("access-control-max-age", HeaderValue::from(CORS_MAX_AGE));
    }
}

/// Whether a route is outside the JWT authorizer (`Authorizer: NONE` in
/// the template, which a template test keeps equal to the handler's
/// table).
fn is_public(method: &str, path: &str) -> bool {
    // The template's `Preflight` route: OPTIONS on any path.
    if method == "OPTIONS" {
        return true;
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    adtrail_api::ROUTES.iter().any(|r| {
        let parts: Vec<&str> = r.path.trim_matches('/').split('/').collect();
        r.public
            && r.method == method
            && parts.len() == segments.len()
            && parts
                .iter()
                .zip(&segments)
                .all(|(p, s)| p.starts_with('{') || p == s)
    })
}

/// What API Gateway does around the function: the JWT authorizer (save
/// on the routes outside it), the v2 event, and the `apigw-requestid`
/// header on every answer, naming the request as the event did.
async fn invoke_api(
    local: &Local,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let request_id = uuid::Uuid::new_v4().to_string();
    let mut answer = authorize_and_invoke(local, method, uri, headers, body, &request_id).await;
    if let Ok(value) = axum::http::HeaderValue::from_str(&request_id) {
        answer.headers_mut().insert("apigw-requestid", value);
    }
    answer
}

async fn authorize_and_invoke(
    local: &Local,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    request_id: &str,
) -> Response {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    // The routes the template leaves outside the authorizer (Meta's
    // webhook) reach the function without claims, whatever they carry.
    let claims = if is_public(method.as_str(), uri.path()) {
        None
    } else {
        let Some(claims) = token.and_then(|t| local.keys.verify(t).ok()) else {
            return json_response(StatusCode::UNAUTHORIZED, json!({"message": "Unauthorized"}));
        };
        Some(claims)
    };
    let mut event = api_gateway_event(method, uri, headers, body, claims.as_ref());
    event["requestContext"]["requestId"] = json!(request_id);
    let request = match lambda_http::request::from_str(&event.to_string()) {
        Ok(r) => r,
        Err(_) => return json_response(StatusCode::BAD_REQUEST, json!({"message": "Bad Request"})),
    };
    // Lambda ends the function at its timeout, and API Gateway stops
    // waiting at its integration timeout, whichever comes first.
    let timeout = local.runner.timeout("ApiFunction");
    let waited = timeout.min(INTEGRATION_TIMEOUT);
    let request = request.with_lambda_context(crate::runner::context_until(timeout));
    let response = local
        .runner
        .handler_time
        .invoke(
            "ApiFunction",
            waited,
            Box::pin(adtrail_api::handle(&local.runner.api, request)),
        )
        .await;
    // A function error is API Gateway's 500, and so is an answer larger
    // than Lambda's payload limit: Lambda fails the invocation with
    // `Function.ResponseSizeTooLarge` after the handler succeeded. Past
    // the integration timeout API Gateway answers 503 without waiting for
    // the function.
    let response = match response {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => return internal_error(),
        Err(_) if waited == INTEGRATION_TIMEOUT => {
            return json_response(
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"message": "Service Unavailable"}),
            );
        }
        Err(_) => return internal_error(),
    };
    let document = response_document_len(&response);
    if document > LAMBDA_RESPONSE_LIMIT {
        eprintln!(
            "{} {}: Function.ResponseSizeTooLarge: the response document is {document} bytes, over Lambda's {LAMBDA_RESPONSE_LIMIT}",
            method,
            uri.path()
        );
        return internal_error();
    }
    let (parts, body) = response.into_parts();
    let bytes: Vec<u8> = match body {
        lambda_http::Body::Empty => vec![],
        lambda_http::Body::Text(t) => t.into_bytes(),
        lambda_http::Body::Binary(b) => b,
        _ => vec![],
    };
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// How long an HTTP API waits for its Lambda integration: 30 seconds,
/// the most it allows.
pub const INTEGRATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Lambda's limit on a synchronous invocation's response: the document the
/// runtime posts, in bytes (the "6 MB" of Lambda's quotas, as its error
/// message gives it).
pub const LAMBDA_RESPONSE_LIMIT: usize = 6_291_556;

/// API Gateway's answer when the function fails.
fn internal_error() -> Response {
    json_response(
        StatusCode::INTERNAL_SERVER_ERROR,
        json!({"message": "Internal Server Error"}),
    )
}

/// The size of the document `lambda_http` posts to Lambda for `response`
/// (API Gateway's v2 response: the body a JSON string, escaped once more;
/// a binary body in base64), which is what Lambda measures.
pub fn response_document_len(response: &lambda_http::Response<lambda_http::Body>) -> usize {
    use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
    let mut document = ApiGatewayV2httpResponse::default();
    document.status_code = i64::from(response.status().as_u16());
    document.headers = response.headers().clone();
    document.is_base64_encoded = matches!(response.body(), lambda_http::Body::Binary(_));
    document.body = match response.body() {
        lambda_http::Body::Empty => None,
        other => Some(other.clone()),
    };
    serde_json::to_vec(&document).map_or(usize::MAX, |d| d.len())
}

/// An API Gateway HTTP API (payload 2.0) event, with the authorizer's
/// claims as API Gateway passes them.
pub fn api_gateway_event(
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    claims: Option<&std::collections::HashMap<String, String>>,
) -> Value {
    let mut header_map = serde_json::Map::new();
    for (k, v) in headers {
        if let Ok(v) = v.to_str() {
            header_map.insert(k.as_str().to_ascii_lowercase(), json!(v));
        }
    }
    let mut query = serde_json::Map::new();
    for (k, v) in url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        // API Gateway joins a repeated parameter with commas.
        let joined = match query.get(k.as_ref()).and_then(Value::as_str) {
            Some(prev) => format!("{prev},{v}"),
            None => v.into_owned(),
        };
        query.insert(k.into_owned(), json!(joined));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let (body_text, base64) = match std::str::from_utf8(body) {
        Ok(t) => (t.to_owned(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(body), true),
    };
    let mut event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": uri.path(),
        "rawQueryString": uri.query().unwrap_or(""),
        "headers": header_map,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "domainPrefix": "local",
            "http": {"method": method.as_str(), "path": uri.path(), "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "local"},
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": "$default",
            "stage": "$default",
            "time": "",
            "timeEpoch": now,
        },
        "isBase64Encoded": base64,
    });
    if !query.is_empty() {
        event["queryStringParameters"] = Value::Object(query);
    }
    if !body.is_empty() {
        event["body"] = json!(body_text);
    }
    if let Some(claims) = claims {
        event["requestContext"]["authorizer"] = json!({"jwt": {"claims": claims, "scopes": null}});
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: String) -> lambda_http::Response<lambda_http::Body> {
        lambda_http::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(lambda_http::Body::Text(body))
            .expect("a response")
    }

    /// Lambda measures the document it is posted, where each quote of a
    /// JSON body is escaped once more: a body of 4 MB of quotes is twice
    /// that, over the limit.
    #[test]
    fn the_document_counts_the_body_escaped() {
        let plain = response_document_len(&answer("a".repeat(4_000_000)));
        assert!((4_000_000..4_000_200).contains(&plain), "{plain}");
        let quotes = response_document_len(&answer("\"".repeat(4_000_000)));
        assert!((8_000_000..8_000_200).contains(&quotes), "{quotes}");
        assert!(quotes > LAMBDA_RESPONSE_LIMIT);
        let binary = lambda_http::Response::builder()
            .status(200)
            .body(lambda_http::Body::Binary(vec![0; 3_000]))
            .expect("a response");
        assert!((4_000..4_200).contains(&response_document_len(&binary)));
    }
}
