//! Google's OAuth 2.0 for service accounts (RFC 7523's `jwt-bearer`
//! grant): a JWT naming the account's e-mail as issuer, the Data Manager's
//! scope and the token endpoint as audience, valid for an hour, signed
//! RS256 with the account's PKCS #8 private key, and traded at the token
//! endpoint for an access token. The key never leaves this module but as a
//! signature.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeyPair;
use aws_lc_rs::signature::RSA_PKCS1_SHA256;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;

/// The grant a signed assertion is traded under.
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The scope the Data Manager API asks for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/datamanager";
/// An assertion's lifetime: Google takes at most an hour.
const LIFETIME_S: i64 = 3_600;

/// Why a private key cannot sign. Never holds the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("the private key is not PKCS #8 PEM")]
    Pem,
    #[error("the private key is not an RSA key of 2048 bits or more")]
    Key,
    #[error("the private key could not sign")]
    Sign,
}

/// The key pair of a `-----BEGIN PRIVATE KEY-----` PEM.
///
/// # Errors
/// [`KeyError::Pem`] when the text is not PEM, [`KeyError::Key`] when its
/// key is not an RSA key Google signs with.
pub fn key_pair(pem: &str) -> Result<KeyPair, KeyError> {
    let body: String = pem
        .trim()
        .strip_prefix("-----BEGIN PRIVATE KEY-----")
        .and_then(|rest| rest.strip_suffix("-----END PRIVATE KEY-----"))
        .ok_or(KeyError::Pem)?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = STANDARD.decode(body).map_err(|_| KeyError::Pem)?;
    KeyPair::from_pkcs8(&der).map_err(|_| KeyError::Key)
}

/// The signed assertion for `client_email`, issued at `now_s` for
/// `audience` (the token endpoint's URL).
///
/// # Errors
/// [`KeyError`] when the key cannot sign.
pub fn assertion(
    client_email: &str,
    private_key: &str,
    audience: &str,
    now_s: i64,
) -> Result<String, KeyError> {
    let pair = key_pair(private_key)?;
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
    let claims = json!({
        "iss": client_email,
        "scope": SCOPE,
        "aud": audience,
        "iat": now_s,
        "exp": now_s + LIFETIME_S,
    });
    let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(claims.to_string()));
    let mut signature = vec![0; pair.public_modulus_len()];
    pair.sign(
        &RSA_PKCS1_SHA256,
        &SystemRandom::new(),
        input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| KeyError::Sign)?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::rsa::KeySize;
    use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

    use super::*;

    fn pem(pair: &KeyPair) -> String {
        let der = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(pair).unwrap();
        let body = STANDARD.encode(der.as_ref());
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    #[test]
    fn an_assertion_is_signed_by_the_key_and_names_the_account() {
        let pair = KeyPair::generate(KeySize::Rsa2048).unwrap();
        let jwt = assertion(
            "adtrail@loja.iam.gserviceaccount.com",
            &pem(&pair),
            "https://oauth2.googleapis.com/token",
            1_000,
        )
        .unwrap();
        let (input, signature) = jwt.rsplit_once('.').unwrap();
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, pair.public_key().as_ref())
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).unwrap(),
            )
            .expect("a valid RS256 signature");
        let claims: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(input.split('.').nth(1).unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            claims,
            json!({"iss": "adtrail@loja.iam.gserviceaccount.com", "scope": SCOPE,
                   "aud": "https://oauth2.googleapis.com/token", "iat": 1_000, "exp": 4_600})
        );
    }

    #[test]
    fn a_key_that_is_not_pkcs8_rsa_is_named_never_shown() {
        assert_eq!(key_pair("not a key").err(), Some(KeyError::Pem));
        let garbage = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----";
        assert_eq!(key_pair(garbage).err(), Some(KeyError::Key));
        assert!(!KeyError::Key.to_string().contains("AAAA"));
    }
}
