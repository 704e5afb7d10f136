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
    /// Google OAuth 2.0 for a service account: its e-mail and its RSA
    /// private key (PKCS #8 PEM, as Google's key file holds it), which
    /// signs the JWT an access token is traded for.
    GoogleServiceAccount {
        client_email: String,
        private_key: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Token(_) => f.write_str("Credentials::Token(<sealed>)"),
            Credentials::GoogleOAuth { .. } => f.write_str("Credentials::GoogleOAuth(<sealed>)"),
            Credentials::GoogleServiceAccount { .. } => {
                f.write_str("Credentials::GoogleServiceAccount(<sealed>)")
            }
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

/// A service account's e-mail: Google's own shape,
/// `name@project.iam.gserviceaccount.com`.
fn check_service_account_email(value: &str) -> Result<(), IdError> {
    let ok = value.len() <= 254
        && value.split_once('@').is_some_and(|(name, domain)| {
            !name.is_empty() && domain.ends_with(".gserviceaccount.com")
        })
        && value.chars().all(|c| c.is_ascii_graphic());
    if !ok {
        return Err(IdError::new(
            "credentials.clientEmail",
            "must be a service account's e-mail (…@….iam.gserviceaccount.com)",
        ));
    }
    Ok(())
}

/// A PKCS #8 PEM private key: its shape only (whether the key parses is
/// the platforms crate's to say, which holds the cryptography).
fn check_private_key_shape(value: &str) -> Result<(), IdError> {
    let body = value.trim();
    let ok = body.len() <= 8192
        && body.starts_with("-----BEGIN PRIVATE KEY-----")
        && body.ends_with("-----END PRIVATE KEY-----");
    if !ok {
        return Err(IdError::new(
            "credentials.privateKey",
            "must be the key file's private_key (PKCS #8 PEM, at most 8192 characters)",
        ));
    }
    Ok(())
}

/// The Google credentials a registration may carry: a client with a
/// refresh token, or a service account.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoogleInput<'a> {
    pub client_id: Option<&'a str>,
    pub client_secret: Option<&'a str>,
    pub refresh_token: Option<&'a str>,
    pub client_email: Option<&'a str>,
    pub private_key: Option<&'a str>,
}

impl GoogleInput<'_> {
    fn is_empty(&self) -> bool {
        [
            self.client_id,
            self.client_secret,
            self.refresh_token,
            self.client_email,
            self.private_key,
        ]
        .iter()
        .all(Option::is_none)
    }
}

const GOOGLE_SHAPES: &str = "for google must be {clientId, clientSecret, refreshToken} or a service account's {clientEmail, privateKey}";

impl Credentials {
    /// The credentials `platform` takes, checked field by field.
    ///
    /// # Errors
    /// [`IdError`] naming the field (`credentials.accessToken`, …), never
    /// its value.
    pub fn for_platform(
        platform: Platform,
        access_token: Option<&str>,
        google: GoogleInput<'_>,
    ) -> Result<Self, IdError> {
        let g = google;
        match (platform, access_token) {
            (Platform::Google, None) => match (
                (g.client_id, g.client_secret, g.refresh_token),
                (g.client_email, g.private_key),
            ) {
                ((Some(id), Some(secret), Some(refresh)), (None, None)) => {
                    check_secret("credentials.clientId", id)?;
                    check_secret("credentials.clientSecret", secret)?;
                    check_secret("credentials.refreshToken", refresh)?;
                    Ok(Credentials::GoogleOAuth {
                        client_id: id.to_owned(),
                        client_secret: secret.to_owned(),
                        refresh_token: refresh.to_owned(),
                    })
                }
                ((None, None, None), (Some(email), Some(key))) => {
                    check_service_account_email(email)?;
                    check_private_key_shape(key)?;
                    Ok(Credentials::GoogleServiceAccount {
                        client_email: email.to_owned(),
                        private_key: key.trim().to_owned(),
                    })
                }
                _ => Err(IdError::new("credentials", GOOGLE_SHAPES)),
            },
            (Platform::Google, Some(_)) => Err(IdError::new("credentials", GOOGLE_SHAPES)),
            (_, Some(token)) if g.is_empty() => {
                check_secret("credentials.accessToken", token)?;
                Ok(Credentials::Token(token.to_owned()))
            }
            (_, _) => Err(IdError::new(
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
            Credentials::GoogleServiceAccount {
                client_email,
                private_key,
            } => serde_json::json!({
                "clientEmail": client_email,
                "privateKey": private_key,
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
        if let Some(client_email) = field("clientEmail") {
            return Some(Credentials::GoogleServiceAccount {
                client_email,
                private_key: field("privateKey")?,
            });
        }
        Some(Credentials::GoogleOAuth {
            client_id: field("clientId")?,
            client_secret: field("clientSecret")?,
            refresh_token: field("refreshToken")?,
        })
    }
}
