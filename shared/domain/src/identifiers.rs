//! Contact identifiers normalised and hashed the way each ad platform
//! documents it. The five disagree on the phone number (Meta, Pinterest and
//! Snap want digits with the country code and no `+`; Google and TikTok
//! want E.164 with `+`) and on Gmail addresses (Google's Data Manager drops
//! the dots and the `+tag` of the local part), so one normaliser for all is
//! wrong. Each function answers `None` for a value it cannot make sense of;
//! the caller drops that field, naming it, never the value.
//!
//! The facts and golden vectors come from each platform's documentation
//! (`../shared/research/platforms.md` §0.2, §1.6, §2.3, §3.6, §4.3, §5.3).

use crate::contact::sha256_hex;

/// An ad platform adtrail sends conversions to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Platform {
    Meta,
    Google,
    TikTok,
    Pinterest,
    Snap,
}

impl Platform {
    pub const ALL: [Platform; 5] = [
        Self::Meta,
        Self::Google,
        Self::TikTok,
        Self::Pinterest,
        Self::Snap,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Meta => "meta",
            Self::Google => "google",
            Self::TikTok => "tiktok",
            Self::Pinterest => "pinterest",
            Self::Snap => "snap",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// The platform's name as people write it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Meta => "Meta",
            Self::Google => "Google",
            Self::TikTok => "TikTok",
            Self::Pinterest => "Pinterest",
            Self::Snap => "Snap",
        }
    }

    /// Whether the platform wants the phone as E.164 with its `+`.
    fn phone_with_plus(self) -> bool {
        matches!(self, Self::Google | Self::TikTok)
    }
}

/// A value that is already a lowercase hex SHA-256: taken as the hash the
/// host made, by the platform's own rule (it cannot be checked).
pub fn is_sha256(value: &str) -> bool {
    value.len() == 64
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// An e-mail address as `platform` hashes it: trimmed and lowercased (all
/// five); Google also drops inner whitespace and, for `gmail.com` and
/// `googlemail.com`, every `.` and any `+tag` of the local part.
pub fn email(platform: Platform, raw: &str) -> Option<String> {
    let lower = raw.trim().to_lowercase();
    let text: String = if platform == Platform::Google {
        lower.chars().filter(|c| !c.is_whitespace()).collect()
    } else {
        lower
    };
    let (local, domain) = text.split_once('@')?;
    let valid = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains('@')
        && !text.chars().any(char::is_whitespace);
    if !valid {
        return None;
    }
    if platform == Platform::Google && matches!(domain, "gmail.com" | "googlemail.com") {
        let local = local.split('+').next().unwrap_or_default().replace('.', "");
        if local.is_empty() {
            return None;
        }
        return Some(format!("{local}@{domain}"));
    }
    Some(text)
}

/// The calling code of a country (ISO 3166 alpha-2), for phones given
/// without one. The countries adtrail's hosts sell in first; `None` for
/// the others, whose phones must then come with `+`.
pub fn calling_code(country: &str) -> Option<&'static str> {
    const CODES: &[(&str, &str)] = &[
        ("AR", "54"),
        ("AT", "43"),
        ("AU", "61"),
        ("BE", "32"),
        ("BO", "591"),
        ("BR", "55"),
        ("CA", "1"),
        ("CH", "41"),
        ("CL", "56"),
        ("CN", "86"),
        ("CO", "57"),
        ("CR", "506"),
        ("CZ", "420"),
        ("DE", "49"),
        ("DK", "45"),
        ("DO", "1"),
        ("EC", "593"),
        ("ES", "34"),
        ("FI", "358"),
        ("FR", "33"),
        ("GB", "44"),
        ("GR", "30"),
        ("GT", "502"),
        ("HN", "504"),
        ("IE", "353"),
        ("IL", "972"),
        ("IN", "91"),
        ("IT", "39"),
        ("JP", "81"),
        ("KR", "82"),
        ("MX", "52"),
        ("NG", "234"),
        ("NL", "31"),
        ("NO", "47"),
        ("NZ", "64"),
        ("PA", "507"),
        ("PE", "51"),
        ("PL", "48"),
        ("PR", "1"),
        ("PT", "351"),
        ("PY", "595"),
        ("SE", "46"),
        ("SV", "503"),
        ("US", "1"),
        ("UY", "598"),
        ("VE", "58"),
        ("ZA", "27"),
    ];
    let country = country.trim().to_ascii_uppercase();
    CODES
        .iter()
        .find(|(c, _)| *c == country)
        .map(|(_, code)| *code)
}

/// A phone number as `platform` hashes it, from any common format: `+`
/// or `00` before the country code, or a national number (its trunk `0`
/// dropped) in `country`. Digits only for Meta, Pinterest and Snap;
/// E.164 with `+` for Google and TikTok. `None` without a country code to
/// be had, or outside E.164's 8 to 15 digits.
pub fn phone(platform: Platform, raw: &str, country: Option<&str>) -> Option<String> {
    let text = raw.trim();
    if text.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let international = if text.starts_with('+') {
        digits
    } else if let Some(rest) = digits.strip_prefix("00") {
        rest.to_owned()
    } else {
        let code = calling_code(country?)?;
        if digits.starts_with(code) && digits.len() >= code.len() + 10 {
            // Already with its country code, written without `+`.
            digits
        } else {
            format!("{code}{}", digits.trim_start_matches('0'))
        }
    };
    if !(8..=15).contains(&international.len()) || international.starts_with('0') {
        return None;
    }
    Some(if platform.phone_with_plus() {
        format!("+{international}")
    } else {
        international
    })
}

/// A first or last name as `platform` hashes it: lowercase, no
/// punctuation, letters outside ASCII kept (`Valéry` → `valéry`). TikTok
/// also drops inner whitespace; Google drops titles (`Mrs.`, `Jr.`).
pub fn name(platform: Platform, raw: &str) -> Option<String> {
    const TITLES: [&str; 9] = ["mr", "mrs", "ms", "miss", "dr", "jr", "sr", "ii", "iii"];
    let lower = raw.trim().to_lowercase();
    let words = lower.split_whitespace().map(|w| {
        w.chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' && platform == Platform::Google)
            .collect::<String>()
    });
    let words: Vec<String> = words
        .filter(|w| !w.is_empty())
        .filter(|w| platform != Platform::Google || !TITLES.contains(&w.as_str()))
        .collect();
    let joined = if platform == Platform::TikTok {
        words.concat()
    } else {
        words.join(" ")
    };
    (!joined.is_empty()).then_some(joined)
}

/// The host's own id for the contact: trimmed (TikTok also lowercases it).
pub fn external_id(platform: Platform, raw: &str) -> Option<String> {
    let text = raw.trim();
    if text.is_empty() {
        return None;
    }
    Some(if platform == Platform::TikTok {
        text.to_lowercase()
    } else {
        text.to_owned()
    })
}

/// The SHA-256 `platform` receives for a normalised value, or the host's
/// own hash passed through.
pub fn hashed(raw: &str, normalise: impl FnOnce(&str) -> Option<String>) -> Option<String> {
    if is_sha256(raw) {
        return Some(raw.to_owned());
    }
    normalise(raw).map(|v| sha256_hex(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Platform::*;

    /// The examples the platforms' own documentation gives, value and hash.
    #[test]
    fn golden_vectors_from_the_platforms_documentation() {
        // Meta, customer information parameters.
        assert_eq!(
            hashed("John_Smith@gmail.com", |v| email(Meta, v)).as_deref(),
            Some("62a14e44f765419d10fea99367361a727c12365e2520f32218d505ed9aa0f62f")
        );
        assert_eq!(
            phone(Meta, "(650)555-1212", Some("US")).as_deref(),
            Some("16505551212")
        );
        assert_eq!(
            hashed("(650)555-1212", |v| phone(Meta, v, Some("US"))).as_deref(),
            Some("e323ec626319ca94ee8bff2e4c87cf613be6ea19919ed1364124e16807ab3176")
        );
        assert_eq!(
            hashed("Mary", |v| name(Meta, v)).as_deref(),
            Some("6915771be1c5aa0c886870b6951b03d7eafc121fea0e80a5ea83beb7c449f4ec")
        );
        assert_eq!(
            hashed("Valéry", |v| name(Meta, v)).as_deref(),
            Some("08e1996b5dd49e62a4b4c010d44e4345592a863bb9f8e3976219bac29417149c")
        );
        // Google Data Manager, formatting guidelines.
        assert_eq!(
            email(Google, "cloudy.sanfrancisco+shopping@gmail.com").as_deref(),
            Some("cloudysanfrancisco@gmail.com")
        );
        assert_eq!(
            email(Google, "user.name+NYC@Example.com").as_deref(),
            Some("user.name+nyc@example.com")
        );
        assert_eq!(
            phone(Google, "(800)555-0100", Some("US")).as_deref(),
            Some("+18005550100")
        );
        // Snap, Conversions API parameters.
        assert_eq!(
            hashed("Person@Example.com", |v| email(Snap, v)).as_deref(),
            Some("542d240129883c019e106e3b1b2d3f3cb3537c43c425364de8e951d5a3083345")
        );
        assert_eq!(
            phone(Snap, "+44 844 412 4653", None).as_deref(),
            Some("448444124653")
        );
        assert_eq!(
            hashed("+44 844 412 4653", |v| phone(Snap, v, None)).as_deref(),
            Some("dc008fda46e2e64002cf2f82a4906236282d431c4f75e5b60bfe79fc48546383")
        );
        assert_eq!(
            hashed("Raphaël", |v| name(Snap, v)).as_deref(),
            Some("e74bb89e718fe1e19c422a48382870399f8bf7ca8dfa008739e75b0be76627b7")
        );
    }

    #[test]
    fn one_phone_five_ways() {
        let brazil = "(11) 99999-1234";
        let want = [
            (Meta, "5511999991234"),
            (Google, "+5511999991234"),
            (TikTok, "+5511999991234"),
            (Pinterest, "5511999991234"),
            (Snap, "5511999991234"),
        ];
        for (p, v) in want {
            assert_eq!(phone(p, brazil, Some("BR")).as_deref(), Some(v), "{p:?}");
        }
        // The same number written in its international forms.
        for raw in ["+55 11 99999-1234", "0055 11 99999 1234", "5511999991234"] {
            assert_eq!(
                phone(Meta, raw, Some("BR")).as_deref(),
                Some("5511999991234"),
                "{raw}"
            );
        }
        // A trunk zero goes; Snap's `00` rule too.
        assert_eq!(
            phone(Snap, "0844 412 4653", Some("GB")).as_deref(),
            Some("448444124653")
        );
        assert_eq!(
            phone(Snap, "0044 844 412 4653", None).as_deref(),
            Some("448444124653")
        );
    }

    #[test]
    fn what_cannot_be_read_is_dropped() {
        assert_eq!(
            phone(Meta, "6505551212", None),
            None,
            "no country to be had"
        );
        assert_eq!(phone(Meta, "6505551212", Some("ZZ")), None);
        assert_eq!(phone(Meta, "call me", Some("US")), None);
        assert_eq!(phone(Meta, "+1 555", None), None, "too short");
        assert_eq!(phone(Meta, "+1234567890123456", None), None, "too long");
        for bad in [
            "",
            "no-at-sign",
            "@example.com",
            "a@b",
            "a b@example.com",
            "a@@b.com",
        ] {
            assert_eq!(email(Meta, bad), None, "{bad:?}");
        }
        assert_eq!(name(Meta, " . , "), None);
        assert_eq!(external_id(Meta, "   "), None);
    }

    #[test]
    fn names_and_ids_follow_each_platform() {
        assert_eq!(name(Meta, "  O'Brien ").as_deref(), Some("obrien"));
        assert_eq!(name(TikTok, "Ana Maria").as_deref(), Some("anamaria"));
        assert_eq!(name(Meta, "Ana Maria").as_deref(), Some("ana maria"));
        assert_eq!(name(Google, "Mrs. Ana").as_deref(), Some("ana"));
        assert_eq!(external_id(TikTok, " CRM-42 ").as_deref(), Some("crm-42"));
        assert_eq!(external_id(Snap, " CRM-42 ").as_deref(), Some("CRM-42"));
    }

    #[test]
    fn a_hash_the_host_made_passes_through() {
        let h = sha256_hex("5511999991234");
        assert_eq!(hashed(&h, |v| phone(Meta, v, Some("BR"))), Some(h.clone()));
        assert!(!is_sha256(&h.to_uppercase()));
        assert_eq!(Platform::parse("tiktok"), Some(TikTok));
        assert_eq!(Platform::parse("TikTok"), None);
    }
}
