//! Google's token endpoint for service accounts (RFC 7523's `jwt-bearer`
//! grant), as strict as Google's documentation: the assertion is an RS256
//! JWT whose issuer is a service account Google knows, whose signature its
//! public key verifies, with the `datamanager` scope, the token endpoint as
//! audience, and a lifetime of at most an hour that includes now.
//! Anything else is `invalid_grant` (`invalid_scope` for a missing scope).

use aws_lc_rs::encoding::{AsDer, Pkcs8V1Der};
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{KeyPair as _, RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::Value;

/// The service account the fake knows from the start.
pub const GOOGLE_SERVICE_ACCOUNT: &str = "adtrail-fake@loja-x.iam.gserviceaccount.com";
/// The scope an assertion must ask for.
const SCOPE: &str = "https://www.googleapis.com/auth/datamanager";

/// A service account's key: what its key file gives the host, and the
/// public half Google keeps.
#[derive(Clone)]
pub struct ServiceAccountKey {
    pub client_email: String,
    /// PKCS #8 PEM, as the key file's `private_key`.
    pub private_key: String,
    public_key: Vec<u8>,
}

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServiceAccountKey({})", self.client_email)
    }
}

impl ServiceAccountKey {
    /// A new 2048-bit key for `client_email`.
    ///
    /// # Panics
    /// If the platform cannot generate an RSA key.
    pub fn generate(client_email: &str) -> Self {
        let pair = KeyPair::generate(KeySize::Rsa2048).expect("RSA key generation");
        let der = AsDer::<Pkcs8V1Der>::as_der(&pair).expect("PKCS #8");
        let body = STANDARD.encode(der.as_ref());
        let lines: Vec<String> = body
            .as_bytes()
            .chunks(64)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect();
        Self {
            client_email: client_email.to_owned(),
            private_key: format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                lines.join("\n")
            ),
            public_key: pair.public_key().as_ref().to_vec(),
        }
    }
}

fn part(text: &str) -> Option<Value> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).ok()?).ok()
}

/// Checks an assertion against the accounts Google knows at `now_s`:
/// `Ok` with the account's e-mail, or Google's `error` code and its
/// description.
pub(crate) fn verify(
    assertion: &str,
    known: &[ServiceAccountKey],
    now_s: i64,
) -> Result<String, (&'static str, &'static str)> {
    const BAD: (&str, &str) = ("invalid_grant", "Invalid JWT Signature.");
    let mut parts = assertion.split('.');
    let (Some(h), Some(c), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BAD);
    };
    let (Some(header), Some(claims)) = (part(h), part(c)) else {
        return Err(BAD);
    };
    if header.get("alg").and_then(Value::as_str) != Some("RS256") {
        return Err(BAD);
    }
    let text = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or("");
    let number = |k: &str| claims.get(k).and_then(Value::as_i64).unwrap_or(0);
    let key = known
        .iter()
        .find(|k| k.client_email == text("iss"))
        .ok_or(("invalid_grant", "Invalid grant: account not found"))?;
    let signature = URL_SAFE_NO_PAD.decode(sig).map_err(|_| BAD)?;
    UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, &key.public_key)
        .verify(format!("{h}.{c}").as_bytes(), &signature)
        .map_err(|_| BAD)?;
    if !text("scope").split(' ').any(|s| s == SCOPE) {
        return Err(("invalid_scope", "The scope is not the Data Manager's."));
    }
    let (iat, exp) = (number("iat"), number("exp"));
    let timely = exp > iat && exp - iat <= 3_600 && iat <= now_s + 60 && exp > now_s;
    if !timely || !text("aud").ends_with("/token") {
        return Err((
            "invalid_grant",
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.",
        ));
    }
    Ok(key.client_email.clone())
}
