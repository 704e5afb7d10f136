//! The AWS SDK's HTTP client on the shared reqwest stack: the SDK signs,
//! retries and reads the answer; this only carries the request there and
//! back, and says which failures are worth retrying.
//!
//! It keeps what the SDK's own client does on the wire: the connect and
//! read timeouts of the client's settings (one reqwest client per distinct
//! pair, all on the one TLS configuration), no redirects followed (the SDK
//! reads a 3xx as an answer), and the same classes of failure (a timeout,
//! a broken connection, a request the client could not build).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::{HttpRequest, HttpResponse};
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::body::SdkBody;

/// The client to hand an `SdkConfig` (`http_client`): one per process, so
/// every SDK client shares its connection pools.
pub fn client() -> SharedHttpClient {
    static CLIENT: std::sync::OnceLock<SharedHttpClient> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| SharedHttpClient::new(ReqwestClient::default()))
        .clone()
}

type Timeouts = (Option<Duration>, Option<Duration>);

/// reqwest clients by the (connect, read) timeouts they were built with.
#[derive(Debug, Default)]
struct ReqwestClient {
    by_timeouts: Mutex<HashMap<Timeouts, reqwest::Client>>,
}

impl HttpClient for ReqwestClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        _components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        let mut clients = self.by_timeouts.lock().unwrap_or_else(|e| e.into_inner());
        let client = clients.entry(key).or_insert_with(|| build(key)).clone();
        SharedHttpConnector::new(Connector { client })
    }
}

fn build((connect, read): Timeouts) -> reqwest::Client {
    let mut builder = crate::client_builder().redirect(reqwest::redirect::Policy::none());
    if let Some(t) = connect {
        builder = builder.connect_timeout(t);
    }
    if let Some(t) = read {
        builder = builder.read_timeout(t);
    }
    // Only a TLS backend reqwest does not know fails a build, and the
    // configuration is rustls, always.
    builder
        .build()
        .expect("a reqwest client on the shared rustls configuration")
}

/// reqwest's client is a handle to its shared pool: a clone is cheap.
#[derive(Debug)]
struct Connector {
    client: reqwest::Client,
}

impl HttpConnector for Connector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let client = self.client.clone();
        HttpConnectorFuture::new(async move {
            let request = request
                .try_into_http1x()
                .map_err(|e| ConnectorError::user(e.into()))?
                .map(body);
            let request =
                reqwest::Request::try_from(request).map_err(|e| ConnectorError::user(e.into()))?;
            let response = client.execute(request).await.map_err(classify)?;
            let response: http::Response<reqwest::Body> = response.into();
            HttpResponse::try_from(response.map(SdkBody::from_body_1_x))
                .map_err(|e| ConnectorError::other(e.into(), None))
        })
    }
}

/// The SDK's body as reqwest's, polled as it is even when its bytes are at
/// hand: the SDK wraps it to see it sent (its stalled-stream protection
/// counts the bytes read from it), and a body whose bytes went out
/// another way counts as stalled once the answer takes longer than the
/// grace period. Its length is the request's `content-length` header.
fn body(body: SdkBody) -> reqwest::Body {
    reqwest::Body::wrap(body)
}

/// What the SDK's retry strategy makes of a failure: a timeout and a
/// broken or refused connection are transient, as in the SDK's own client.
fn classify(e: reqwest::Error) -> ConnectorError {
    if e.is_timeout() {
        ConnectorError::timeout(e.into())
    } else if e.is_connect() || e.is_request() || e.is_body() {
        ConnectorError::io(e.into())
    } else if e.is_builder() {
        ConnectorError::user(e.into())
    } else {
        ConnectorError::other(e.into(), None)
    }
}

#[cfg(test)]
mod tests {
    use aws_smithy_runtime_api::client::runtime_components::RuntimeComponentsBuilder;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn connector(settings: HttpConnectorSettings) -> SharedHttpConnector {
        let components = RuntimeComponentsBuilder::for_tests()
            .build()
            .expect("test components");
        client().http_connector(&settings, &components)
    }

    fn request(url: &str, body: &'static str) -> HttpRequest {
        let request = http::Request::builder()
            .method("POST")
            .uri(url)
            .header("x-amz-target", "DynamoDB_20120810.GetItem")
            .body(SdkBody::from(body))
            .unwrap();
        HttpRequest::try_from(request).unwrap()
    }

    /// A server that reads one request and answers `answer` (or nothing).
    async fn server(answer: Option<&'static str>) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = vec![0; 4096];
            let n = socket.read(&mut seen).await.unwrap();
            seen.truncate(n);
            match answer {
                Some(a) => socket.write_all(a.as_bytes()).await.unwrap(),
                None => tokio::time::sleep(Duration::from_secs(5)).await,
            }
            seen
        });
        (url, handle)
    }

    #[tokio::test]
    async fn a_request_goes_out_whole_and_its_answer_comes_back() {
        let (url, seen) = server(Some(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 11\r\n\r\n{\"a\":\"b\"}\r\n",
        ))
        .await;
        let response = connector(HttpConnectorSettings::builder().build())
            .call(request(&url, "{\"TableName\":\"t\"}"))
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400);
        assert_eq!(
            response.headers().get("content-type"),
            Some("application/x-amz-json-1.0")
        );
        assert_eq!(response.body().bytes(), None, "the body streams");
        let body = aws_smithy_types::byte_stream::ByteStream::new(response.into_body())
            .collect()
            .await
            .unwrap()
            .into_bytes();
        assert_eq!(&body[..], b"{\"a\":\"b\"}\r\n");
        let seen = String::from_utf8(seen.await.unwrap())
            .unwrap()
            .to_lowercase();
        assert!(seen.starts_with("post / http/1.1\r\n"), "{seen}");
        assert!(seen.contains("x-amz-target: dynamodb_20120810.getitem\r\n"));
        assert!(seen.contains("content-length: 17\r\n"));
        assert!(seen.ends_with("{\"tablename\":\"t\"}"));
    }

    #[tokio::test]
    async fn a_silent_server_is_a_timeout_and_a_closed_port_a_broken_connection() {
        let (url, _seen) = server(None).await;
        let settings = HttpConnectorSettings::builder()
            .read_timeout(Duration::from_millis(200))
            .build();
        let e = connector(settings)
            .call(request(&url, "{}"))
            .await
            .unwrap_err();
        assert!(e.is_timeout(), "{e:?}");

        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", closed.local_addr().unwrap());
        drop(closed);
        let e = connector(HttpConnectorSettings::builder().build())
            .call(request(&url, "{}"))
            .await
            .unwrap_err();
        assert!(e.is_io(), "{e:?}");
    }
}
