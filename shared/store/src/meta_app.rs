//! The Meta app behind Facebook Login for Business: its id and secret, read
//! from the Secrets Manager secret the stack names (`META_APP_SECRET_ID`),
//! never from code or the environment itself.
//!
//! Read at each login, not cached: logins are rare, and a rotated secret
//! then applies at once.

use crate::{AppSecrets, StoreError};

/// The app's credentials. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct MetaApp {
    pub app_id: String,
    pub app_secret: String,
    /// The token Meta echoes when it verifies the webhook's URL; `None`:
    /// the secret holds none, and the verification is refused.
    pub webhook_verify_token: Option<String>,
}

impl std::fmt::Debug for MetaApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaApp")
            .field("app_id", &self.app_id)
            .field("app_secret", &"<redacted>")
            .field("webhook_verify_token", &"<redacted>")
            .finish()
    }
}

/// Why the app cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MetaAppError {
    /// The stack names no secret: Facebook Login is off.
    #[error("no Meta app is configured")]
    NotConfigured,
    /// The secret is not `{"appId": digits, "appSecret": text,
    /// "webhookVerifyToken"?: text}`.
    #[error("the Meta app secret is not {{\"appId\", \"appSecret\", \"webhookVerifyToken\"?}}")]
    Malformed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl MetaApp {
    /// Parses the secret's JSON text, bounding both fields.
    ///
    /// # Errors
    /// [`MetaAppError::Malformed`].
    pub fn parse(text: &str) -> Result<Self, MetaAppError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Raw {
            app_id: String,
            app_secret: String,
            webhook_verify_token: Option<String>,
        }
        let raw: Raw = serde_json::from_str(text).map_err(|_| MetaAppError::Malformed)?;
        let id_ok =
            (1..=32).contains(&raw.app_id.len()) && raw.app_id.bytes().all(|b| b.is_ascii_digit());
        let secret_ok = (1..=256).contains(&raw.app_secret.len())
            && raw.app_secret.bytes().all(|b| b.is_ascii_graphic());
        let token_ok = raw.webhook_verify_token.as_deref().is_none_or(|t| {
            (1..=256).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_graphic())
        });
        if !(id_ok && secret_ok && token_ok) {
            return Err(MetaAppError::Malformed);
        }
        Ok(Self {
            app_id: raw.app_id,
            app_secret: raw.app_secret,
            webhook_verify_token: raw.webhook_verify_token,
        })
    }
}

impl AppSecrets<'_> {
    /// The Meta app's credentials.
    ///
    /// # Errors
    /// [`MetaAppError::NotConfigured`] without a secret name,
    /// [`MetaAppError::Malformed`] for a secret of another shape, and
    /// [`MetaAppError::Store`] when Secrets Manager fails or the secret is
    /// missing.
    pub async fn meta_app(&self) -> Result<MetaApp, MetaAppError> {
        let Some(id) = self.names.meta_app_secret.as_deref() else {
            return Err(MetaAppError::NotConfigured);
        };
        let out = self
            .secrets
            .get_secret_value()
            .secret_id(id)
            .send()
            .await
            .map_err(|e| StoreError::service("secretsmanager", e))?;
        MetaApp::parse(out.secret_string().ok_or(MetaAppError::Malformed)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_is_parsed_strictly_and_never_printed() {
        let app = MetaApp::parse(r#"{"appId":"1234","appSecret":"s3cr3t"}"#).unwrap();
        assert_eq!(app.app_id, "1234");
        assert!(!format!("{app:?}").contains("s3cr3t"));
        for bad in [
            r#"{"appId":"12a","appSecret":"x"}"#,
            r#"{"appId":"1","appSecret":""}"#,
            r#"{"appId":"1","appSecret":"a b"}"#,
            r#"{"appId":"1"}"#,
            "not json",
        ] {
            assert!(
                matches!(MetaApp::parse(bad), Err(MetaAppError::Malformed)),
                "{bad}"
            );
        }
    }
}
