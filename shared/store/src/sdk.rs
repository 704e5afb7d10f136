//! The AWS SDK's configuration in a Lambda function, from what Lambda puts
//! in the environment: the region (`AWS_REGION`), the role's credentials
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and,
//! for `sam local` and the tests, `AWS_ENDPOINT_URL`.
//!
//! Not `aws_config::load_from_env`: its default chains (profile files, SSO,
//! STS web identity and assume-role, the container and instance metadata
//! endpoints) are a few hundred kilobytes of every binary and file reads at
//! init, and a Lambda function uses none of them. What the chain would add
//! on top of the environment is the SDK clients' own defaults here: the
//! standard retry strategy (three attempts), the default timeouts, the
//! stalled-stream protection, a lazy identity cache.
//!
//! The HTTP client is `adtrail_http::sdk`'s, one for every SDK client of
//! the process: reqwest on rustls with aws-lc, the stack the calls to the ad
//! platforms use too, so a binary links one of each.

use aws_config::environment::EnvironmentVariableCredentialsProvider;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;

/// The configuration every function's clients are built from.
///
/// # Errors
/// The name of the variable that is missing (`AWS_REGION`, which Lambda
/// always sets). Missing credentials surface on the first call, as the
/// SDK's own environment provider reports them.
pub fn from_lambda_env() -> Result<SdkConfig, String> {
    from_vars(|name| std::env::var(name).ok())
}

fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<SdkConfig, String> {
    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .filter(|r| !r.is_empty())
        .ok_or("AWS_REGION is not set")?;
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .http_client(adtrail_http::sdk::client())
        .credentials_provider(SharedCredentialsProvider::new(
            EnvironmentVariableCredentialsProvider::new(),
        ));
    if let Some(url) = var("AWS_ENDPOINT_URL").filter(|u| !u.is_empty()) {
        config = config.endpoint_url(url);
    }
    Ok(config.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_region_and_endpoint_come_from_the_environment() {
        let config = from_vars(vars(&[
            ("AWS_REGION", "sa-east-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ]))
        .unwrap();
        assert_eq!(config.region().map(Region::as_ref), Some("sa-east-1"));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:5000"));
        assert!(config.credentials_provider().is_some());
        assert!(config.behavior_version().is_some());
        assert!(config.http_client().is_some());
    }

    #[test]
    fn without_an_endpoint_the_sdk_picks_aws_own() {
        let config = from_vars(vars(&[
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", ""),
        ]))
        .unwrap();
        assert_eq!(config.region().map(Region::as_ref), Some("us-east-1"));
        assert_eq!(config.endpoint_url(), None);
    }

    #[test]
    fn without_a_region_it_says_which_variable() {
        assert_eq!(from_vars(vars(&[])).unwrap_err(), "AWS_REGION is not set");
    }

    /// The SDK sees a request's body sent through the shared HTTP client:
    /// an answer slower than the stalled-stream grace period is an answer,
    /// not a stalled upload (as it was when the client sent the body's
    /// bytes past the SDK's wrapper).
    #[tokio::test]
    async fn an_answer_slower_than_the_stall_grace_period_is_still_an_answer() {
        use aws_sdk_dynamodb::config::StalledStreamProtectionConfig;
        use std::time::Duration;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0; 8192];
            let _ = socket.read(&mut request).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1_500)).await;
            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 2\r\n\r\n{}";
            socket.write_all(answer.as_bytes()).await.unwrap();
        });
        let config = from_vars(vars(&[
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", &url),
        ]))
        .unwrap()
        .to_builder()
        .credentials_provider(SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new("a", "b", None, None, "test"),
        ))
        .build();
        let ddb = aws_sdk_dynamodb::config::Builder::from(&config)
            .stalled_stream_protection(
                StalledStreamProtectionConfig::enabled()
                    .grace_period(Duration::from_millis(300))
                    .build(),
            )
            .build();
        let answer = aws_sdk_dynamodb::Client::from_conf(ddb)
            .get_item()
            .table_name("t")
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S("a".into()))
            .send()
            .await;
        assert!(answer.is_ok(), "{answer:?}");
    }
}
