//! How the identity provider spells adtrail's scopes and the site grant
//! (the stack's `ScopePrefix` and `SitesClaim`), and how a claim reads in
//! API Gateway's shape: every claim a string, an array as `"[a b]"`.

use std::collections::BTreeSet;

use super::{CONFIGURE, HOST, READ};

/// How the identity provider spells adtrail's scopes and the site grant:
/// the stack's `ScopePrefix` and `SitesClaim`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// What comes before `host`, `read` and `configure` in a token's scope.
    pub scope_prefix: String,
    /// The claim that lists a dashboard's sites.
    pub sites_claim: String,
}

/// A setting of [`Identity`] the template should not have let through.
#[derive(Debug, thiserror::Error)]
#[error("{name} must be 1 to 200 visible characters without spaces")]
pub struct IdentityError {
    name: &'static str,
}

impl Default for Identity {
    fn default() -> Self {
        Self {
            scope_prefix: "adtrail:".into(),
            sites_claim: "sites".into(),
        }
    }
}

impl Identity {
    /// From `SCOPE_PREFIX` and `SITES_CLAIM`; each unset is its default.
    ///
    /// # Errors
    /// [`IdentityError`] naming a setting that is empty, too long or spaced.
    pub fn from_env() -> Result<Self, IdentityError> {
        let mut identity = Self::default();
        for (name, value) in [
            ("SCOPE_PREFIX", &mut identity.scope_prefix),
            ("SITES_CLAIM", &mut identity.sites_claim),
        ] {
            if let Ok(set) = std::env::var(name) {
                let visible = set.chars().all(|c| c.is_ascii_graphic());
                if set.is_empty() || set.len() > 200 || !visible {
                    return Err(IdentityError { name });
                }
                *value = set;
            }
        }
        Ok(identity)
    }

    /// The scopes a token's `scope` claim grants, by their default names;
    /// any other scope (another API's) is left out.
    pub(super) fn scopes(&self, claim: &str) -> BTreeSet<String> {
        words(claim)
            .iter()
            .filter_map(|w| w.strip_prefix(self.scope_prefix.as_str()))
            .filter_map(|name| {
                [HOST, READ, CONFIGURE]
                    .into_iter()
                    .find(|s| s.strip_prefix("adtrail:") == Some(name))
            })
            .map(str::to_owned)
            .collect()
    }
}

/// A claim that may be a space-separated string or `"[a b]"`.
pub(super) fn words(value: &str) -> BTreeSet<String> {
    value
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split([' ', ','])
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_arrive_as_strings_or_bracketed_arrays() {
        assert_eq!(
            words("[a b]"),
            ["a", "b"].into_iter().map(String::from).collect()
        );
        assert_eq!(words("adtrail:read adtrail:configure").len(), 2);
        assert!(words("").is_empty());
    }

    #[test]
    fn a_providers_own_scope_names_map_to_adtrails() {
        let cognito = Identity {
            scope_prefix: "adtrail/".into(),
            sites_claim: "adtrail_sites".into(),
        };
        assert_eq!(
            cognito.scopes("adtrail/read adtrail/configure aws.cognito.signin.user.admin"),
            [READ.to_owned(), CONFIGURE.to_owned()].into()
        );
        assert!(
            cognito.scopes("adtrail:host").is_empty(),
            "the default spelling is not Cognito's"
        );
        assert!(cognito.scopes("adtrail/hostile adtrail/").is_empty());
        let default = Identity::default();
        assert_eq!(
            default.scopes("adtrail:host openid"),
            [HOST.to_owned()].into()
        );
        let okta = Identity {
            scope_prefix: "api://adtrail/".into(),
            ..Identity::default()
        };
        assert_eq!(
            okta.scopes("[api://adtrail/read]"),
            [READ.to_owned()].into()
        );
    }
}
