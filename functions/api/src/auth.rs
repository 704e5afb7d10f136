//! Who is calling: the JWT claims API Gateway's authorizer verified, in its
//! shape (every claim a string; an array arrives as `"[a b]"`). The handler
//! enforces scope, grant and ownership itself from them.
//!
//! The identity provider names the scopes and the grant its own way
//! ([`Identity`]): `adtrail:host` by default, `adtrail/host` from a Cognito
//! resource server `adtrail`; the sites in `sites` by default, or in any
//! claim a provider can add. Inside, the scopes always carry their default
//! names.

use std::collections::{BTreeSet, HashMap};

use adtrail_domain::error_codes::ErrorCode;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use adtrail_domain::OwnerKey;

use crate::Api;
use crate::error::ApiError;

mod identity;
use identity::words;
pub use identity::{Identity, IdentityError};

pub const HOST: &str = "adtrail:host";
pub const CONFIGURE: &str = "adtrail:configure";
pub const READ: &str = "adtrail:read";

/// The `purpose` of a token that forwards one Lead Ads lead.
pub const LEADGEN_PURPOSE: &str = "meta_leadgen";
/// The longest a forwarding token may live (`exp - iat`), in seconds.
pub const LEADGEN_TOKEN_MAX_LIFETIME_S: i64 = 600;

/// The caller, from the verified claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub sub: String,
    pub scopes: BTreeSet<String>,
    /// The dashboard's grant: the sites it may act on.
    pub sites: BTreeSet<String>,
    /// A forwarding token's one lead: it opens `POST /v1/meta/leadgen`
    /// for that Page and lead, and nothing else.
    pub forwards: Option<Forwarded>,
}

/// What a `purpose: meta_leadgen` token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forwarded {
    pub page_id: String,
    pub leadgen_id: String,
}

/// A forwarding token's claims: `page_id`, `leadgen_id`, and a lifetime
/// (`exp - iat`) of at most ten minutes. No scope: it can never be used as
/// a host's or a dashboard's token.
fn forwarded(claims: &HashMap<String, String>) -> Result<Forwarded, ApiError> {
    let refuse = |why: &str| {
        ApiError::new(
            ErrorCode::Unauthenticated,
            format!("a meta_leadgen token {why}"),
        )
    };
    let number = |name: &str| claims.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    match (number("iat"), number("exp")) {
        (Some(iat), Some(exp)) if exp > iat && exp - iat <= LEADGEN_TOKEN_MAX_LIFETIME_S => {}
        _ => return Err(refuse("must carry iat and exp at most 600 seconds apart")),
    }
    if claims.contains_key("scope") {
        return Err(refuse("carries no scope"));
    }
    match (claims.get("page_id"), claims.get("leadgen_id")) {
        (Some(page_id), Some(leadgen_id)) => Ok(Forwarded {
            page_id: page_id.clone(),
            leadgen_id: leadgen_id.clone(),
        }),
        _ => Err(refuse("names its page_id and leadgen_id")),
    }
}

impl Caller {
    /// # Errors
    /// `UNAUTHENTICATED` when the request carries no verified claims.
    pub fn from_request(req: &Request, identity: &Identity) -> Result<Self, ApiError> {
        let claims: Option<HashMap<String, String>> = match req.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx
                .authorizer
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .map(|j| j.claims.clone()),
            _ => None,
        };
        let Some(claims) = claims else {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "a bearer token is required",
            ));
        };
        let sub = claims.get("sub").cloned().unwrap_or_default();
        match claims.get("purpose").map(String::as_str) {
            None => {}
            Some(LEADGEN_PURPOSE) => {
                return Ok(Self {
                    sub,
                    scopes: BTreeSet::new(),
                    sites: BTreeSet::new(),
                    forwards: Some(forwarded(&claims)?),
                });
            }
            Some(_) => {
                return Err(ApiError::new(
                    ErrorCode::Unauthenticated,
                    "the token's purpose opens no route",
                ));
            }
        }
        let scopes = claims
            .get("scope")
            .map(|s| identity.scopes(s))
            .unwrap_or_default();
        let sites = claims
            .get(&identity.sites_claim)
            .map(|s| words(s))
            .unwrap_or_default();
        if sub.is_empty() || scopes.is_empty() {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "the token carries no subject or adtrail scope",
            ));
        }
        Ok(Self {
            sub,
            scopes,
            sites,
            forwards: None,
        })
    }

    pub fn is_host(&self) -> bool {
        self.scopes.contains(HOST)
    }

    /// Host-only operations (sites, board columns, leads).
    ///
    /// # Errors
    /// `FORBIDDEN` for any other scope.
    pub fn require_host(&self) -> Result<(), ApiError> {
        if self.is_host() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "this operation needs the adtrail:host scope",
            ))
        }
    }

    /// Reads of a site: the host, or a dashboard whose grant covers it.
    ///
    /// # Errors
    /// `FORBIDDEN`, naming nothing of the site.
    pub fn may_read(&self, site: &str) -> Result<(), ApiError> {
        if self.is_host()
            || ((self.scopes.contains(READ) || self.scopes.contains(CONFIGURE))
                && self.sites.contains(site))
        {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "the token does not grant access to a requested site",
            ))
        }
    }

    /// Reads of several sites: each must be readable.
    ///
    /// # Errors
    /// `FORBIDDEN`, naming no site.
    pub fn may_read_all(&self, sites: &[adtrail_domain::SiteId]) -> Result<(), ApiError> {
        sites.iter().try_for_each(|s| self.may_read(s.as_str()))
    }

    /// The Meta setup of a site: the host, or a configuring dashboard whose
    /// grant covers it.
    ///
    /// # Errors
    /// `FORBIDDEN`.
    pub fn may_configure(&self, site: &str) -> Result<(), ApiError> {
        if self.is_host() || (self.scopes.contains(CONFIGURE) && self.sites.contains(site)) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "the token may not configure a requested site",
            ))
        }
    }

    /// The owner a path names: any key for the host; for a dashboard only
    /// `me` or its own `dashboard:<sub>`.
    ///
    /// # Errors
    /// `FORBIDDEN` for another owner.
    pub fn owner(&self, named: &str, write: bool) -> Result<String, ApiError> {
        let own = format!("dashboard:{}", self.sub);
        if self.is_host() {
            return Ok(if named == "me" { own } else { named.to_owned() });
        }
        let allowed = if write {
            self.scopes.contains(CONFIGURE)
        } else {
            self.scopes.contains(CONFIGURE) || self.scopes.contains(READ)
        };
        if allowed && (named == "me" || named == own) {
            Ok(own)
        } else {
            Err(ApiError::forbidden(
                "a dashboard acts only as its own owner (use \"me\")",
            ))
        }
    }
}

// The ownership guards: who a write acts as, and which writes must leave
// other owners' work alone.

/// The owner a path names, after the caller's rights.
pub(crate) fn resolve_owner(caller: &Caller, named: &str, write: bool) -> Result<String, ApiError> {
    let owner = caller.owner(named, write)?;
    OwnerKey::parse("ownerKey", &owner)?;
    Ok(owner)
}

/// A write over a whole owner (reconnecting, refreshing or removing it) by
/// a dashboard needs every site the owner feeds or holds a pixel on inside
/// the dashboard's grant: the sites outside it are named, so whoever holds
/// them can act.
///
/// # Errors
/// `FORBIDDEN` naming the sites outside the grant.
pub(crate) async fn require_whole_owner(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<(), ApiError> {
    if caller.is_host() {
        return Ok(());
    }
    let linked = api.store.links().owner_links(owner).await?;
    // The pixels it set count too: a reconnect may mark them not granted
    // and a removal deletes them.
    let pixels = api.store.pixels().owner_pixels(owner).await?;
    let mut outside: Vec<String> = linked
        .into_iter()
        .map(|(site, _)| site)
        .chain(pixels)
        .filter(|site| !caller.sites.contains(site))
        .collect();
    outside.sort();
    outside.dedup();
    if outside.is_empty() {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "ownerKey: this owner still feeds or holds the pixel of sites outside the token's grant: {}",
        outside.join(", ")
    )))
}

/// The owner a write acts as, for the ownership rules: a dashboard always
/// its own; a host the `ownerKey` it names, or none (the host itself, which
/// may change what any owner made).
///
/// # Errors
/// `FORBIDDEN` for a dashboard naming another owner; `INVALID_ARGUMENT`
/// for a malformed key.
pub(crate) fn acting_owner(
    caller: &Caller,
    named: Option<&String>,
) -> Result<Option<String>, ApiError> {
    match (named, caller.is_host()) {
        (Some(owner), _) => Ok(Some(resolve_owner(caller, owner, true)?)),
        (None, true) => Ok(None),
        (None, false) => Ok(Some(resolve_owner(caller, "me", true)?)),
    }
}

/// Whether the caller must leave other owners' work alone: a dashboard
/// always, a host when it asks to.
pub(crate) fn guards_ownership(caller: &Caller, only_own: bool) -> bool {
    !caller.is_host() || only_own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashboards_act_only_as_themselves() {
        let c = Caller {
            sub: "u1".into(),
            scopes: [CONFIGURE.to_owned()].into(),
            sites: ["s1".to_owned()].into(),
            forwards: None,
        };
        assert_eq!(c.owner("me", true).unwrap(), "dashboard:u1");
        assert_eq!(c.owner("dashboard:u1", true).unwrap(), "dashboard:u1");
        assert!(c.owner("dashboard:u2", true).is_err());
        assert!(c.owner("host-owner", true).is_err());
        assert!(c.may_configure("s1").is_ok());
        assert!(c.may_configure("s2").is_err());
        assert!(c.require_host().is_err());
    }

    #[test]
    fn a_forwarding_token_lives_ten_minutes_at_most_and_has_no_scope() {
        let claims = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let ok = claims(&[
            ("iat", "1000"),
            ("exp", "1120"),
            ("page_id", "1"),
            ("leadgen_id", "2"),
        ]);
        assert_eq!(
            forwarded(&ok).unwrap(),
            Forwarded {
                page_id: "1".into(),
                leadgen_id: "2".into()
            }
        );
        let long = claims(&[
            ("iat", "1000"),
            ("exp", "1601"),
            ("page_id", "1"),
            ("leadgen_id", "2"),
        ]);
        assert!(forwarded(&long).is_err());
        let no_iat = claims(&[("exp", "1120"), ("page_id", "1"), ("leadgen_id", "2")]);
        assert!(forwarded(&no_iat).is_err());
        let scoped = claims(&[
            ("iat", "1000"),
            ("exp", "1120"),
            ("page_id", "1"),
            ("leadgen_id", "2"),
            ("scope", HOST),
        ]);
        assert!(forwarded(&scoped).is_err());
        let unnamed = claims(&[("iat", "1000"), ("exp", "1120"), ("page_id", "1")]);
        assert!(forwarded(&unnamed).is_err());
    }
}
