//! The demo's HTTP client: the host's bearer token on every call, and an
//! error that says which call answered what.

use serde_json::Value;

pub(crate) type Error = Box<dyn std::error::Error + Send + Sync>;

pub(crate) struct Client {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) token: String,
}

impl Client {
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Error> {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let value: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            return Err(format!("{method} {path} answered {status}: {value}").into());
        }
        Ok(value)
    }
}
