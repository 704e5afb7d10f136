//! Destinations: where a site's conversions go besides (or instead of) its
//! Meta pixel. A destination is one account on one ad platform, named by a
//! slug the host chooses; it carries the platform's ids, its test mode, its
//! credentials (sealed by the store, never here in plain) and its state.
//!
//! The rules that hold everywhere live here: the slug's grammar, the ids
//! each platform takes, that a slug keeps its platform, that an archived
//! slug stays archived (its history stays readable under it), how many live
//! destinations a site may have, and each platform's name for each event
//! (`../shared/research/platforms.md` §0.3; design choices where the
//! platform has no standard event, said so beside them).

use std::collections::BTreeMap;
use std::fmt;

use crate::capi::EventName;
use crate::identifiers::Platform;
use crate::ids::{IdError, is_hidden};

/// The slug the site's pixel answers to among its destinations: the pixel
/// routes keep managing it, the destination routes refuse it.
pub const PIXEL_SLUG: &str = "meta";

/// Live (not archived) destinations a site may have: each event's fan-out
/// is one DynamoDB transaction, two items a destination.
pub const MAX_LIVE_DESTINATIONS: usize = 20;

/// The platforms adtrail sends to now: a destination on another is
/// registered and listed, but no event fans out to it until its adapter
/// lands.
pub const SENDING_PLATFORMS: &[Platform] = &Platform::ALL;

/// A destination's name within its site: a lowercase letter, then lowercase
/// letters, digits and inner hyphens, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slug(String);

impl Slug {
    /// # Errors
    /// [`IdError`] naming `field` when the value breaks the grammar.
    pub fn parse(field: &str, value: &str) -> Result<Self, IdError> {
        let bytes = value.as_bytes();
        let ok = !bytes.is_empty()
            && bytes.len() <= 64
            && bytes[0].is_ascii_lowercase()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes.last() != Some(&b'-');
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(IdError::new(
                field,
                "must be 1 to 64 lowercase letters, digits and inner hyphens, starting with a letter",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The platform's ids and test mode of a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Account {
    /// A Meta pixel (dataset) sent to with a token of the destination's own.
    Meta {
        pixel_id: String,
        test_event_code: Option<String>,
    },
    /// Google's Data Manager API: the Google Ads account that owns the
    /// conversion actions, the account the credentials log in as (a
    /// manager account, or the same), and one conversion action per event
    /// sent (an event without one is not sent to this destination).
    Google {
        operating_account: String,
        login_account: String,
        conversion_actions: BTreeMap<EventName, String>,
        validate_only: bool,
    },
    /// A TikTok pixel (its code).
    TikTok {
        pixel_code: String,
        test_event_code: Option<String>,
    },
    /// A Pinterest ad account; `test` sends `?test=true` (not recorded).
    Pinterest { ad_account_id: String, test: bool },
    /// A Snap pixel; `validate` sends to the validate endpoint (not
    /// processed).
    Snap { pixel_id: String, validate: bool },
}

impl Account {
    pub fn platform(&self) -> Platform {
        match self {
            Account::Meta { .. } => Platform::Meta,
            Account::Google { .. } => Platform::Google,
            Account::TikTok { .. } => Platform::TikTok,
            Account::Pinterest { .. } => Platform::Pinterest,
            Account::Snap { .. } => Platform::Snap,
        }
    }

    /// Whether events go in the platform's test mode.
    pub fn in_test_mode(&self) -> bool {
        match self {
            Account::Meta {
                test_event_code, ..
            }
            | Account::TikTok {
                test_event_code, ..
            } => test_event_code.is_some(),
            Account::Google { validate_only, .. } => *validate_only,
            Account::Pinterest { test, .. } => *test,
            Account::Snap { validate, .. } => *validate,
        }
    }

    /// Whether this destination sends `event` at all (Google only sends the
    /// events it has a conversion action for).
    pub fn sends(&self, event: EventName) -> bool {
        match self {
            Account::Google {
                conversion_actions, ..
            } => conversion_actions.contains_key(&event),
            _ => platform_event(self.platform(), event).is_some(),
        }
    }
}

/// Checks a Google Ads customer id, ten digits given plain or grouped as
/// Google shows them (`123-456-7890`); answers the ten digits.
///
/// # Errors
/// [`IdError`] naming `field`.
pub fn google_customer_id(field: &str, value: &str) -> Result<String, IdError> {
    let b = value.as_bytes();
    let grouped = b.len() == 12
        && b[3] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 3 || i == 7 || c.is_ascii_digit());
    let plain = b.len() == 10 && b.iter().all(u8::is_ascii_digit);
    if plain || grouped {
        Ok(value.replace('-', ""))
    } else {
        Err(IdError::new(
            field,
            "must be a Google Ads customer id: 10 digits, hyphens allowed",
        ))
    }
}

/// Checks a platform id made of letters and digits (a TikTok pixel code, a
/// Google conversion action id), 1 to `max` of them.
///
/// # Errors
/// [`IdError`] naming `field`.
pub fn alphanumeric_id(field: &str, value: &str, max: usize) -> Result<(), IdError> {
    if value.is_empty() || value.len() > max || !value.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(IdError::new(field, "must be letters and digits only"));
    }
    Ok(())
}

/// Checks a Snap pixel id: a UUID (`8-4-4-4-12` hex digits).
///
/// # Errors
/// [`IdError`] naming `field`.
pub fn snap_pixel_id(field: &str, value: &str) -> Result<(), IdError> {
    let groups: Vec<&str> = value.split('-').collect();
    let lengths = [8, 4, 4, 4, 12];
    let ok = groups.len() == 5
        && groups
            .iter()
            .zip(lengths)
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(())
    } else {
        Err(IdError::new(
            field,
            "must be a Snap pixel id (a UUID: 8-4-4-4-12 hex digits)",
        ))
    }
}

/// Checks a test event code (Meta's, TikTok's): 1 to 64 letters and
/// digits.
///
/// # Errors
/// [`IdError`] naming `field`.
pub fn test_event_code(field: &str, value: &str) -> Result<(), IdError> {
    if value.is_empty() || value.len() > 64 || !value.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(IdError::new(field, "must be 1 to 64 letters and digits"));
    }
    Ok(())
}

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

/// A destination as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub site_id: String,
    pub slug: String,
    pub account: Account,
    pub enabled: bool,
    /// The owner that registered it (a dashboard); `None`: the host.
    pub set_by: Option<String>,
    /// The credentials as KMS sealed them (context: site, slug, purpose);
    /// empty once archived.
    pub sealed_credentials: Vec<u8>,
    /// A new value each time credentials are stored: a refusal stops the
    /// destination only if it was refused under the credentials still
    /// stored.
    pub credential_version: String,
    /// The platform refused the credentials: nothing goes until new ones
    /// are stored.
    pub stopped: bool,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub archived_at: Option<i64>,
}

/// Where a destination is, as a client reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DestinationState {
    Active,
    Disabled,
    /// The platform refused the credentials.
    Stopped,
    Archived,
}

impl DestinationState {
    pub fn as_str(self) -> &'static str {
        match self {
            DestinationState::Active => "active",
            DestinationState::Disabled => "disabled",
            DestinationState::Stopped => "stopped",
            DestinationState::Archived => "archived",
        }
    }
}

impl Destination {
    pub fn state(&self) -> DestinationState {
        if self.archived_at.is_some() {
            DestinationState::Archived
        } else if self.stopped {
            DestinationState::Stopped
        } else if !self.enabled {
            DestinationState::Disabled
        } else {
            DestinationState::Active
        }
    }

    /// Whether new events fan out to it: enabled, not archived, and not
    /// stopped (as for the pixel, nothing queues for credentials the
    /// platform refused until new ones are stored).
    pub fn takes_events(&self) -> bool {
        self.enabled && !self.stopped && self.archived_at.is_none()
    }
}

/// Why a registration cannot replace what is stored under its slug.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreplaceable {
    /// A slug keeps its platform.
    OtherPlatform(Platform),
    /// An archived slug stays archived.
    Archived,
    /// Another owner registered it (only checked for callers that guard
    /// ownership).
    OtherOwner,
}

/// Whether a registration by `setter` for `platform` may replace
/// `stored`.
///
/// # Errors
/// [`Unreplaceable`]: why not.
pub fn may_replace(
    stored: &Destination,
    platform: Platform,
    setter: Option<&str>,
    guards_ownership: bool,
) -> Result<(), Unreplaceable> {
    if stored.archived_at.is_some() {
        return Err(Unreplaceable::Archived);
    }
    if stored.account.platform() != platform {
        return Err(Unreplaceable::OtherPlatform(stored.account.platform()));
    }
    if guards_ownership && stored.set_by.as_deref() != setter {
        return Err(Unreplaceable::OtherOwner);
    }
    Ok(())
}

/// Each platform's name for each event, `None` where the platform has no
/// event to send it as. Meta and TikTok take most of adtrail's names
/// (TikTok's closest to a qualified lead is `ApplicationApproval`);
/// Pinterest and Snap have no qualified lead or schedule in their
/// vocabulary, so those go as `custom` / `CUSTOM_EVENT_1` and `RESERVE`;
/// Snap has no lead event and takes `SIGN_UP`. Google names no events:
/// each goes to its conversion action ([`Account::Google`]).
pub fn platform_event(platform: Platform, event: EventName) -> Option<&'static str> {
    use EventName as E;
    Some(match (platform, event) {
        (Platform::Meta, e) => e.as_str(),
        (Platform::Google, _) => return None,
        (Platform::TikTok, E::QualifiedLead) => "ApplicationApproval",
        (Platform::TikTok, e) => e.as_str(),
        (Platform::Pinterest, e) => match e {
            E::Lead => "lead",
            E::QualifiedLead | E::Schedule | E::InitiateCheckout => "custom",
            E::Purchase => "checkout",
            E::CompleteRegistration => "signup",
            E::AddToCart => "add_to_cart",
            E::ViewContent => "page_visit",
            E::Search => "search",
        },
        (Platform::Snap, e) => match e {
            E::Lead | E::CompleteRegistration => "SIGN_UP",
            E::QualifiedLead => "CUSTOM_EVENT_1",
            E::Schedule => "RESERVE",
            E::Purchase => "PURCHASE",
            E::AddToCart => "ADD_CART",
            E::InitiateCheckout => "START_CHECKOUT",
            E::ViewContent => "VIEW_CONTENT",
            E::Search => "SEARCH",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn destination(platform_account: Account) -> Destination {
        Destination {
            site_id: "s1".into(),
            slug: "tt".into(),
            account: platform_account,
            enabled: true,
            set_by: Some("dashboard:u1".into()),
            sealed_credentials: vec![1],
            credential_version: "v1".into(),
            stopped: false,
            last_error: None,
            created_at: 1,
            updated_at: 1,
            archived_at: None,
        }
    }

    #[test]
    fn slugs_follow_their_grammar() {
        for ok in ["meta", "tiktok-br", "g2", "a"] {
            assert!(Slug::parse("slug", ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "Meta",
            "2g",
            "tik_tok",
            "tiktok-",
            "-a",
            "a b",
            long.as_str(),
        ] {
            assert_eq!(Slug::parse("slug", bad).unwrap_err().field, "slug", "{bad}");
        }
    }

    #[test]
    fn platform_ids_are_checked_by_their_own_shape() {
        assert_eq!(
            google_customer_id("operatingAccount", "123-456-7890").unwrap(),
            "1234567890"
        );
        assert!(google_customer_id("operatingAccount", "123456789").is_err());
        assert!(google_customer_id("operatingAccount", "12345678901").is_err());
        assert!(google_customer_id("operatingAccount", "1-2-3-4-5-6-7-8-9-0").is_err());
        assert!(snap_pixel_id("pixelId", "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d").is_ok());
        assert!(snap_pixel_id("pixelId", "4a5b8c1d0e2f4a6b8c9d0e1f2a3b4c5d").is_err());
        assert!(alphanumeric_id("pixelCode", "C4ABCDEF123", 64).is_ok());
        assert!(alphanumeric_id("pixelCode", "C4 AB", 64).is_err());
        assert!(test_event_code("testEventCode", "TEST123").is_ok());
        assert!(test_event_code("testEventCode", "").is_err());
    }

    #[test]
    fn credentials_fit_their_platform_and_never_print() {
        let t = Credentials::for_platform(Platform::TikTok, Some("tok-1"), None).unwrap();
        assert_eq!(format!("{t:?}"), "Credentials::Token(<sealed>)");
        assert_eq!(Credentials::from_sealed_text(&t.to_sealed_text()), Some(t));
        let g =
            Credentials::for_platform(Platform::Google, None, Some(("cid", "sec", "rt"))).unwrap();
        assert!(!format!("{g:?}").contains("sec"));
        assert_eq!(Credentials::from_sealed_text(&g.to_sealed_text()), Some(g));
        assert_eq!(
            Credentials::for_platform(Platform::Google, Some("x"), None)
                .unwrap_err()
                .field,
            "credentials"
        );
        assert_eq!(
            Credentials::for_platform(Platform::Snap, None, Some(("a", "b", "c")))
                .unwrap_err()
                .field,
            "credentials"
        );
        let err =
            Credentials::for_platform(Platform::Pinterest, Some("has space"), None).unwrap_err();
        assert_eq!(err.field, "credentials.accessToken");
        assert!(!err.to_string().contains("has space"));
    }

    #[test]
    fn a_slug_keeps_its_platform_its_archive_and_its_owner() {
        let d = destination(Account::TikTok {
            pixel_code: "C1".into(),
            test_event_code: None,
        });
        assert_eq!(
            may_replace(&d, Platform::TikTok, Some("dashboard:u1"), true),
            Ok(())
        );
        assert_eq!(
            may_replace(&d, Platform::Snap, Some("dashboard:u1"), true),
            Err(Unreplaceable::OtherPlatform(Platform::TikTok))
        );
        assert_eq!(
            may_replace(&d, Platform::TikTok, Some("dashboard:u2"), true),
            Err(Unreplaceable::OtherOwner)
        );
        // The host, not guarding ownership, may replace any owner's.
        assert_eq!(may_replace(&d, Platform::TikTok, None, false), Ok(()));
        let archived = Destination {
            archived_at: Some(5),
            ..d
        };
        assert_eq!(
            may_replace(&archived, Platform::TikTok, None, false),
            Err(Unreplaceable::Archived)
        );
        assert_eq!(archived.state(), DestinationState::Archived);
        assert!(!archived.takes_events());
    }

    #[test]
    fn every_platform_names_every_event_it_sends() {
        for e in EventName::ALL {
            assert_eq!(platform_event(Platform::Meta, e), Some(e.as_str()));
            assert!(platform_event(Platform::Google, e).is_none());
            for p in [Platform::TikTok, Platform::Pinterest, Platform::Snap] {
                assert!(platform_event(p, e).is_some(), "{p:?} {e:?}");
            }
        }
        assert_eq!(
            platform_event(Platform::Snap, EventName::Purchase),
            Some("PURCHASE")
        );
        assert_eq!(
            platform_event(Platform::Pinterest, EventName::Purchase),
            Some("checkout")
        );
        let google = Account::Google {
            operating_account: "1234567890".into(),
            login_account: "1234567890".into(),
            conversion_actions: [(EventName::Purchase, "987".to_owned())].into(),
            validate_only: false,
        };
        assert!(google.sends(EventName::Purchase));
        assert!(!google.sends(EventName::Lead));
    }
}
