//! The hashed contact data a host sends as `meta`, and SHA-256 in
//! lowercase hex. `meta` is the one field that never fails a call: anything
//! but the one shape is ignored as a whole, and the reason never repeats
//! the value.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of a text.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The SHA-256 of the empty string: it matches nobody and is left out.
pub(crate) const EMPTY_HASH: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The most phone hashes one lead carries.
pub const MAX_PHONES: usize = 10;

/// What a conversion row keeps of a contact for its one platform: SHA-256
/// digests of the platform's own normalisation, and the plain signals the
/// platform wants unhashed (IP, user agent, its click ids). Erased once
/// delivery ends. Its `Debug` never shows a value.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ContactHashes {
    pub ph: Vec<String>,
    pub external_id: Option<String>,
    pub em: Vec<String>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    /// Signal name ([`crate::events::Signal::as_str`]) → plain value.
    pub signals: BTreeMap<String, String>,
}

impl ContactHashes {
    /// Whether anything is left to match a person on (IP and user agent
    /// alone are not).
    pub fn is_empty(&self) -> bool {
        self.ph.is_empty()
            && self.em.is_empty()
            && self.external_id.is_none()
            && self.first_name.is_none()
            && self.last_name.is_none()
            && self.signals.keys().all(|k| k == "ip" || k == "userAgent")
    }
}

impl std::fmt::Debug for ContactHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ContactHashes({} phones, {} e-mails, external id: {}, names: {}, signals: {:?})",
            self.ph.len(),
            self.em.len(),
            self.external_id.is_some(),
            self.first_name.is_some() || self.last_name.is_some(),
            self.signals.keys().collect::<Vec<_>>()
        )
    }
}

fn is_digest(v: &str) -> bool {
    v.len() == 64 && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why `meta` was ignored: a reason that never repeats the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaIgnored {
    NotAnObject,
    UnknownField,
    BadPhones,
    BadExternalId,
    NothingToMatch,
}

/// Reads `meta`: `{ph: [64 lowercase hex] (≤ 10), externalId?: 64
/// lowercase hex}`. Anything else is ignored as a whole (`Err` says why,
/// without the value). Hashes of the empty string are left out; `meta` with
/// nothing left to match is ignored too.
pub fn parse_meta(value: &Value) -> Result<ContactHashes, MetaIgnored> {
    let Value::Object(map) = value else {
        return Err(MetaIgnored::NotAnObject);
    };
    if map.keys().any(|k| k != "ph" && k != "externalId") {
        return Err(MetaIgnored::UnknownField);
    }
    let ph = match map.get("ph") {
        None => vec![],
        Some(Value::Array(items)) if items.len() <= MAX_PHONES => items
            .iter()
            .map(|v| v.as_str().filter(|s| is_digest(s)).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or(MetaIgnored::BadPhones)?,
        Some(_) => return Err(MetaIgnored::BadPhones),
    };
    let external_id = match map.get("externalId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if is_digest(s) => Some(s.clone()),
        Some(_) => return Err(MetaIgnored::BadExternalId),
    };
    // Each hash once, wherever it repeats (DynamoDB refuses a set with a
    // value twice), in the order given.
    let mut seen = std::collections::HashSet::new();
    let ph: Vec<String> = ph
        .into_iter()
        .filter(|h| h != EMPTY_HASH && seen.insert(h.clone()))
        .collect();
    let external_id = external_id.filter(|h| h != EMPTY_HASH);
    if ph.is_empty() && external_id.is_none() {
        return Err(MetaIgnored::NothingToMatch);
    }
    Ok(ContactHashes {
        ph,
        external_id,
        ..ContactHashes::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const H: &str = "5f2b8b0f3c6a4e1e9d7c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e";

    #[test]
    fn meta_takes_the_one_shape_and_ignores_anything_else_whole() {
        let ok = parse_meta(&json!({"ph": [H], "externalId": H})).unwrap();
        assert_eq!(ok.ph, vec![H.to_owned()]);
        assert!(!format!("{ok:?}").contains(H), "Debug never shows a hash");
        assert!(parse_meta(&json!({"externalId": H})).is_ok());
        let cases = [
            (json!("5511999991234"), MetaIgnored::NotAnObject),
            (json!({"ph": ["5511999991234"]}), MetaIgnored::BadPhones),
            (json!({"ph": [H.to_uppercase()]}), MetaIgnored::BadPhones),
            (json!({"ph": H}), MetaIgnored::BadPhones),
            (json!({"ph": vec![H; 11]}), MetaIgnored::BadPhones),
            (
                json!({"ph": [H], "externalId": 5}),
                MetaIgnored::BadExternalId,
            ),
            (json!({"ph": [H], "email": H}), MetaIgnored::UnknownField),
            (json!({"ph": [EMPTY_HASH]}), MetaIgnored::NothingToMatch),
            (json!({}), MetaIgnored::NothingToMatch),
        ];
        for (value, why) in cases {
            assert_eq!(parse_meta(&value), Err(why), "{value}");
        }
        let dropped = parse_meta(&json!({"ph": [EMPTY_HASH, H]})).unwrap();
        assert_eq!(dropped.ph, vec![H.to_owned()]);
        let b = H.replace('5', "6");
        let repeated = parse_meta(&json!({"ph": [H, b, H]})).unwrap();
        assert_eq!(
            repeated.ph,
            vec![H.to_owned(), b],
            "a hash repeated anywhere is kept once"
        );
    }
}
