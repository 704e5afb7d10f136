//! Facebook Login for Business, Meta's side: the code traded for a token
//! (`POST /oauth/access_token`, the app's id and secret in the form body,
//! never in a URL), a short-lived user token traded for a long-lived one,
//! and `GET /debug_token` for a token whose answer said nothing of its
//! lifetime. Errors keep Meta's code for [`classify_login`] and never carry
//! the secret, the code or a token.
//!
//! [`classify_login`]: adtrail_domain::graph_error::classify_login

use serde_json::Value;

use crate::client::GraphClient;
use crate::error::{GraphError, scrub};

/// A token Meta gave, with its lifetime when the answer said it. `Debug`
/// never shows the token.
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedToken {
    pub access_token: String,
    pub expires_in_s: Option<i64>,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("access_token", &"<redacted>")
            .field("expires_in_s", &self.expires_in_s)
            .finish()
    }
}

/// What `/debug_token` says of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenInfo {
    /// When it expires, epoch seconds; `None` when it never does.
    pub expires_at_s: Option<i64>,
    /// A system user's token (Login for Business with a system user
    /// configuration).
    pub system_user: bool,
}

/// The longest token we accept from Meta.
const MAX_TOKEN: usize = 1_024;

/// Removes every secret of the exchange from an error Meta answered.
fn scrubbed(mut e: GraphError, secrets: &[&str]) -> GraphError {
    for s in secrets {
        e.message = scrub(&e.message, s);
    }
    e
}

fn issued(json: &Value) -> Result<IssuedToken, GraphError> {
    let token = json
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| (1..=MAX_TOKEN).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| GraphError::malformed("token"))?;
    let expires_in_s = match json.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .filter(|s| (0..=10 * 365 * 86_400).contains(s))
                .ok_or_else(|| GraphError::malformed("token lifetime"))?,
        ),
    };
    Ok(IssuedToken {
        access_token: token.to_owned(),
        expires_in_s,
    })
}

impl GraphClient {
    /// Trades a login code for a token.
    ///
    /// # Errors
    /// [`GraphError`] with Meta's code (see `classify_login`).
    pub async fn trade_code(
        &self,
        app_id: &str,
        app_secret: &str,
        code: &str,
        redirect_uri: &str,
    ) -> Result<IssuedToken, GraphError> {
        let form = [
            ("client_id", app_id),
            ("client_secret", app_secret),
            ("redirect_uri", redirect_uri),
            ("code", code),
        ];
        self.oauth_token(&form, &[app_secret, code]).await
    }

    /// Trades a short-lived user token for a long-lived one (about 60 days).
    ///
    /// # Errors
    /// [`GraphError`] with Meta's code.
    pub async fn long_lived(
        &self,
        app_id: &str,
        app_secret: &str,
        token: &str,
    ) -> Result<IssuedToken, GraphError> {
        let form = [
            ("grant_type", "fb_exchange_token"),
            ("client_id", app_id),
            ("client_secret", app_secret),
            ("fb_exchange_token", token),
        ];
        self.oauth_token(&form, &[app_secret, token]).await
    }

    /// `POST /oauth/access_token` with `form` in the body (never in a
    /// URL); an error carries none of `secrets`.
    async fn oauth_token(
        &self,
        form: &[(&str, &str)],
        secrets: &[&str],
    ) -> Result<IssuedToken, GraphError> {
        let (json, _) = self
            .call(
                self.http()
                    .post(self.url("oauth/access_token", &[]))
                    .form(form),
                "",
            )
            .await
            .map_err(|e| scrubbed(e, secrets))?;
        issued(&json)
    }

    /// Asks Meta how long a token lives, with the app's token (`id|secret`)
    /// in the header. The inspected token is a query parameter, as Meta's
    /// endpoint requires: only this call carries one in a URL, over TLS.
    ///
    /// # Errors
    /// [`GraphError`] with Meta's code.
    pub async fn debug_token(
        &self,
        app_id: &str,
        app_secret: &str,
        token: &str,
    ) -> Result<TokenInfo, GraphError> {
        let app_token = format!("{app_id}|{app_secret}");
        let (json, _) = self
            .call(
                self.http()
                    .get(self.url("debug_token", &[("input_token", token)])),
                &app_token,
            )
            .await
            .map_err(|e| scrubbed(e, &[app_secret, token]))?;
        let data = json
            .get("data")
            .ok_or_else(|| GraphError::malformed("token details"))?;
        let expires_at = data
            .get("expires_at")
            .and_then(Value::as_i64)
            .filter(|s| *s >= 0)
            .ok_or_else(|| GraphError::malformed("token expiry"))?;
        Ok(TokenInfo {
            // Meta says 0 for a token that never expires.
            expires_at_s: (expires_at > 0).then_some(expires_at),
            system_user: data.get("type").and_then(Value::as_str) == Some("SYSTEM_USER"),
        })
    }
}
