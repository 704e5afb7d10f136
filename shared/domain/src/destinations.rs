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
use crate::ids::IdError;

/// The slug the site's pixel answers to among its destinations: the pixel
/// routes keep managing it, the destination routes refuse it.
pub const PIXEL_SLUG: &str = "meta";

/// The slug a row counts and is filtered under: its destination's, or the
/// pixel's.
pub fn slug_or_pixel(destination: Option<&str>) -> &str {
    destination.unwrap_or(PIXEL_SLUG)
}

/// Live (not archived) destinations a site may have: a lead change's rows
/// for all of them go in the change's one DynamoDB transaction (three
/// events, a row each per destination: the store checks it fits).
pub const MAX_LIVE_DESTINATIONS: usize = 20;

/// Destinations a site keeps, live and archived (an archived slug stays,
/// with its history, and is never registered again): each lead change and
/// posted event reads them all to find the live ones, so their number is
/// bounded, not only the live ones'.
pub const MAX_DESTINATIONS: usize = 200;

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

mod credentials;
pub use credentials::{Credentials, GoogleInput};

#[cfg(test)]
mod tests;
