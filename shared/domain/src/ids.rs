//! Identifiers that parse, never merely validate: once a value is a
//! [`SiteId`] or an [`AdAccountId`] it obeys the Conventions' grammar, so no
//! handler re-checks it and no invalid key can reach a table.
//!
//! Opaque ids (site ids, owner keys, lead keys, change ids, column keys,
//! event ids): 1–128 characters of `A-Za-z0-9._:-`. Meta ids: ad accounts are
//! `act_` and digits; ads, pixels, pages and forms are digits, at most 32.

use std::fmt;

/// Why a value is not an id; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {reason}")]
pub struct IdError {
    pub field: String,
    pub reason: &'static str,
}

impl IdError {
    pub fn new(field: &str, reason: &'static str) -> Self {
        Self {
            field: field.to_owned(),
            reason,
        }
    }
}

/// Checks an opaque id: 1–128 characters of `A-Za-z0-9._:-`.
/// Characters a person cannot see, or that make two names look the same:
/// control characters, zero-width spaces and joiners, line and paragraph
/// separators, bidi marks and the byte-order mark.
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'
        )
}

/// Visible blank space (what is left of Unicode's white space once the
/// hidden characters are out).
pub fn is_blank(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Text a person typed (a site name, a lead's label, a column's name): 1 to
/// `max` characters, none hidden, not all blank. Kept as given (no
/// trimming), so the OpenAPI document can state the rule exactly.
///
/// # Errors
/// What is wrong, in words to follow the field's name.
pub fn check_plain_text(value: &str, max: usize) -> Result<(), String> {
    let chars = value.chars().count();
    if chars == 0 || chars > max {
        return Err(format!("must be 1 to {max} characters"));
    }
    if value.chars().any(is_hidden) {
        return Err("must not contain control or invisible characters".into());
    }
    if value.chars().all(is_blank) {
        return Err("must not be blank".into());
    }
    Ok(())
}

pub fn check_opaque(field: &str, value: &str) -> Result<(), IdError> {
    if value.is_empty() || value.len() > 128 {
        return Err(IdError::new(field, "must be 1 to 128 characters"));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    {
        return Err(IdError::new(
            field,
            "may contain only letters, digits and . _ : -",
        ));
    }
    Ok(())
}

/// Checks a Meta numeric id: 1–32 digits.
pub fn check_meta_numeric(field: &str, value: &str) -> Result<(), IdError> {
    if value.is_empty() || value.len() > 32 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(IdError::new(field, "must be 1 to 32 digits"));
    }
    Ok(())
}

macro_rules! opaque_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Parses the value of `field`.
            ///
            /// # Errors
            /// [`IdError`] naming `field` when the value breaks the grammar.
            pub fn parse(field: &str, value: &str) -> Result<Self, IdError> {
                check_opaque(field, value)?;
                Ok(Self(value.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

opaque_id!(
    /// A host's site.
    SiteId
);
opaque_id!(
    /// Whoever stored a Meta connection: the host's key, or `dashboard:<sub>`.
    OwnerKey
);

/// A Meta ad account, `act_` followed by digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdAccountId(String);

impl AdAccountId {
    /// # Errors
    /// [`IdError`] naming `field` unless the value is `act_` and 1–32 digits.
    pub fn parse(field: &str, value: &str) -> Result<Self, IdError> {
        match value.strip_prefix("act_") {
            Some(digits) if check_meta_numeric(field, digits).is_ok() => Ok(Self(value.to_owned())),
            _ => Err(IdError::new(
                field,
                "must be act_ followed by 1 to 32 digits",
            )),
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AdAccountId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A Meta ad, digits only.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AdId(String);

impl AdId {
    /// # Errors
    /// [`IdError`] naming `field` unless the value is 1–32 digits.
    pub fn parse(field: &str, value: &str) -> Result<Self, IdError> {
        check_meta_numeric(field, value)?;
        Ok(Self(value.to_owned()))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_ids_follow_the_grammar() {
        for ok in ["a", "site-1", "uze:affiliate:42", "A.b_c", &"x".repeat(128)] {
            assert!(SiteId::parse("siteId", ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "é", "a/b", "a\u{200b}", "a\n", &"x".repeat(129)] {
            let err = SiteId::parse("siteId", bad).unwrap_err();
            assert_eq!(err.field, "siteId");
        }
    }

    #[test]
    fn ad_accounts_are_act_and_digits() {
        assert!(AdAccountId::parse("adAccountId", "act_1029384756").is_ok());
        for bad in [
            "1029384756",
            "act_",
            "act_12a",
            "ACT_1",
            &format!("act_{}", "1".repeat(33)),
        ] {
            assert!(AdAccountId::parse("adAccountId", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ads_are_digits_up_to_32() {
        assert!(AdId::parse("adId", "120200000000001").is_ok());
        assert!(AdId::parse("adId", &"9".repeat(33)).is_err());
        assert!(AdId::parse("adId", "12 3").is_err());
    }
}
