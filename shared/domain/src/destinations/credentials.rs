//! What a destination sends with, checked by its platform's shape; the
//! store seals it whole and nothing of it ever prints.

use std::fmt;

use crate::identifiers::Platform;
use crate::ids::{IdError, is_hidden};

/// What a destination sends with. Its `Debug` never shows a value; the
/// store seals [`Credentials::to_sealed_text`] and nothing else leaves.
#[derive(Clone, PartialEq, Eq)]
pub enum Credentials {
    /// Meta's system-user token, TikTok's `Access-Token`, Pinterest's
    /// conversion token, Snap's Conversions API token.
    Token(String),
    /// Google OAuth 2.0: an installed or web application's client and a
    /// refresh token with the `datamanager` scope; access tokens are minted
    /// from it and cached until they expire.
    GoogleOAuth {
        client_id: String,
        client_secret: String,
        refresh_token: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Token(_) => f.write_str("Credentials::Token(<sealed>)"),
            Credentials::GoogleOAuth { .. } => f.write_str("Credentials::GoogleOAuth(<sealed>)"),
        }
    }
}

/// A credential value: 1 to 4,096 printable characters, no spaces.
fn check_secret(field: &str, value: &str) -> Result<(), IdError> {
    if value.is_empty()
        || value.len() > 4096
        || value
            .chars()
            .any(|c| c.is_whitespace() || is_hidden(c) || !c.is_ascii_graphic())
    {
        return Err(IdError::new(
            field,
            "must be 1 to 4096 printable characters without spaces",
        ));
    }
    Ok(())
}

impl Credentials {
    /// The credentials `platform` takes, checked field by field.
    ///
    /// # Errors
    /// [`IdError`] naming the field (`credentials.accessToken`, …), never
    /// its value.
    pub fn for_platform(
        platform: Platform,
        access_token: Option<&str>,
        google: Option<(&str, &str, &str)>,
    ) -> Result<Self, IdError> {
        match (platform, access_token, google) {
            (Platform::Google, None, Some((id, secret, refresh))) => {
                check_secret("credentials.clientId", id)?;
                check_secret("credentials.clientSecret", secret)?;
                check_secret("credentials.refreshToken", refresh)?;
                Ok(Credentials::GoogleOAuth {
                    client_id: id.to_owned(),
                    client_secret: secret.to_owned(),
                    refresh_token: refresh.to_owned(),
                })
            }
            (Platform::Google, _, _) => Err(IdError::new(
                "credentials",
                "for google must be {clientId, clientSecret, refreshToken}",
            )),
            (_, Some(token), None) => {
                check_secret("credentials.accessToken", token)?;
                Ok(Credentials::Token(token.to_owned()))
            }
            (_, _, _) => Err(IdError::new(
                "credentials",
                "must be {accessToken} for this platform",
            )),
        }
    }

    /// The text the store seals: one JSON object.
    pub fn to_sealed_text(&self) -> String {
        let value = match self {
            Credentials::Token(t) => serde_json::json!({ "accessToken": t }),
            Credentials::GoogleOAuth {
                client_id,
                client_secret,
                refresh_token,
            } => serde_json::json!({
                "clientId": client_id,
                "clientSecret": client_secret,
                "refreshToken": refresh_token,
            }),
        };
        value.to_string()
    }

    /// Reads back what [`Credentials::to_sealed_text`] wrote.
    pub fn from_sealed_text(text: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        let field = |name: &str| v.get(name).and_then(|x| x.as_str()).map(str::to_owned);
        if let Some(token) = field("accessToken") {
            return Some(Credentials::Token(token));
        }
        Some(Credentials::GoogleOAuth {
            client_id: field("clientId")?,
            client_secret: field("clientSecret")?,
            refresh_token: field("refreshToken")?,
        })
    }
}
