//! The local stand-in for API Gateway's JWT authorizer: a dev RSA key pair
//! made at start, RS256 tokens signed with it, and verification that hands
//! the handler the claims exactly as API Gateway does (every claim a
//! string, an array as `"[a b]"`).

use std::collections::HashMap;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{self, KeyPair as _, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

pub const LOCAL_ISSUER: &str = "https://adtrail.local/";
pub const LOCAL_AUDIENCE: &str = "adtrail-local";

/// Why a bearer token was refused (API Gateway answers 401 for all of them).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JwtError {
    #[error("malformed token")]
    Malformed,
    #[error("only RS256 tokens are accepted")]
    Algorithm,
    #[error("bad signature")]
    Signature,
    #[error("wrong issuer or audience")]
    Claims,
    #[error("expired")]
    Expired,
}

/// A signing key pair.
pub struct DevKeys {
    pair: KeyPair,
    issuer: String,
    audience: String,
}

impl std::fmt::Debug for DevKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevKeys")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl DevKeys {
    /// A fresh 2048-bit key pair.
    ///
    /// # Panics
    /// If the platform cannot generate an RSA key.
    pub fn generate(issuer: &str, audience: &str) -> Self {
        Self {
            pair: KeyPair::generate(KeySize::Rsa2048).expect("RSA key generation"),
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
        }
    }

    pub fn local() -> Self {
        Self::generate(LOCAL_ISSUER, LOCAL_AUDIENCE)
    }

    /// Signs `claims` (iss, aud, iat and a one-day exp added unless given).
    pub fn sign(&self, claims: Value) -> String {
        let mut claims = claims;
        let now = unix_now();
        for (k, v) in [
            ("iss", json!(self.issuer)),
            ("aud", json!(self.audience)),
            ("iat", json!(now)),
            ("exp", json!(now + 86_400)),
        ] {
            if claims.get(k).is_none() {
                claims[k] = v;
            }
        }
        self.sign_exact(&claims)
    }

    /// Signs `claims` as they are (a provider's own shape: a Cognito access
    /// token has no `aud`).
    pub fn sign_exact(&self, claims: &Value) -> String {
        let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
        let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
        let input = format!("{header}.{payload}");
        let mut sig = vec![0; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &signature::RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                input.as_bytes(),
                &mut sig,
            )
            .expect("RSA signing");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
    }

    /// A token for the host's servers: `adtrail:host`.
    pub fn host_token(&self) -> String {
        self.sign(json!({"sub": "local-host", "scope": "adtrail:host"}))
    }

    /// Verifies a bearer token as API Gateway's JWT authorizer does, and
    /// answers its claims in API Gateway's shape.
    ///
    /// # Errors
    /// [`JwtError`] for any token API Gateway would refuse.
    pub fn verify(&self, token: &str) -> Result<HashMap<String, String>, JwtError> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Malformed);
        };
        let header: Value = URL_SAFE_NO_PAD
            .decode(h)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(JwtError::Malformed)?;
        if header.get("alg").and_then(Value::as_str) != Some("RS256") {
            return Err(JwtError::Algorithm);
        }
        let sig = URL_SAFE_NO_PAD.decode(s).map_err(|_| JwtError::Malformed)?;
        UnparsedPublicKey::new(
            &signature::RSA_PKCS1_2048_8192_SHA256,
            self.pair.public_key().as_ref(),
        )
        .verify(format!("{h}.{p}").as_bytes(), &sig)
        .map_err(|_| JwtError::Signature)?;
        let claims: Value = URL_SAFE_NO_PAD
            .decode(p)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(JwtError::Malformed)?;
        let aud_ok = match claims.get("aud") {
            Some(Value::String(a)) => *a == self.audience,
            Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(&self.audience)),
            // API Gateway reads `client_id` only when `aud` is absent: a
            // Cognito access token carries its app client there.
            None => claims.get("client_id").and_then(Value::as_str) == Some(&self.audience),
            Some(_) => false,
        };
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) || !aud_ok {
            return Err(JwtError::Claims);
        }
        if claims
            .get("exp")
            .and_then(Value::as_i64)
            .is_none_or(|exp| exp <= unix_now())
        {
            return Err(JwtError::Expired);
        }
        let Value::Object(map) = claims else {
            return Err(JwtError::Malformed);
        };
        Ok(map
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s,
                    Value::Array(items) => {
                        let words: Vec<String> = items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                            .collect();
                        format!("[{}]", words.join(" "))
                    }
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_and_claims_take_api_gateway_shape() {
        let keys = DevKeys::local();
        let token = keys.sign(json!({"sub": "u1", "scope": "adtrail:read", "sites": ["a", "b"]}));
        let claims = keys.verify(&token).unwrap();
        assert_eq!(claims["sites"], "[a b]");
        assert_eq!(claims["scope"], "adtrail:read");
        assert!(claims["exp"].parse::<i64>().is_ok());
    }

    #[test]
    fn a_token_without_aud_is_addressed_by_its_client_id() {
        let keys = DevKeys::local();
        // A Cognito access token: no `aud`, the app client in `client_id`.
        let now = unix_now();
        let cognito = |client: &str| {
            keys.sign_exact(
                &json!({"sub": "u", "iss": LOCAL_ISSUER, "client_id": client,
                "token_use": "access", "scope": "adtrail/read", "iat": now, "exp": now + 3_600}),
            )
        };
        assert_eq!(
            keys.verify(&cognito(LOCAL_AUDIENCE)).unwrap()["client_id"],
            LOCAL_AUDIENCE
        );
        assert_eq!(
            keys.verify(&cognito("another-client")),
            Err(JwtError::Claims)
        );
        // With both, `aud` decides.
        let both = keys.sign(json!({"sub": "u", "aud": "elsewhere", "client_id": LOCAL_AUDIENCE}));
        assert_eq!(keys.verify(&both), Err(JwtError::Claims));
    }

    #[test]
    fn foreign_expired_and_misaddressed_tokens_are_refused() {
        let keys = DevKeys::local();
        let other = DevKeys::local();
        assert_eq!(keys.verify(&other.host_token()), Err(JwtError::Signature));
        assert_eq!(
            keys.verify(&keys.sign(json!({"sub": "u", "exp": 1}))),
            Err(JwtError::Expired)
        );
        assert_eq!(
            keys.verify(&keys.sign(json!({"sub": "u", "iss": "https://evil/"}))),
            Err(JwtError::Claims)
        );
        assert_eq!(
            keys.verify(&keys.sign(json!({"sub": "u", "aud": "other"}))),
            Err(JwtError::Claims)
        );
        assert_eq!(keys.verify("a.b"), Err(JwtError::Malformed));
        let none_alg = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode("{}")
        );
        assert_eq!(keys.verify(&none_alg), Err(JwtError::Algorithm));
    }
}
