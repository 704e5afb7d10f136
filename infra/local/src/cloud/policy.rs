//! The stack's permissions as `template.yaml` declares them: each
//! function's role policy and the KMS key policy, with their resources
//! resolved to one canonical form. [`Policy::judge`] answers, for one call
//! of one function, whether AWS would allow it, and if not, which grant is
//! missing.
//!
//! Resources are compared by logical id (`arn:aws:dynamodb:::table/Table`),
//! so the check does not depend on the prefixes of the local stack. What
//! IAM does that this does not: permission boundaries, SCPs, session
//! policies (adtrail uses none). Every `!If` takes its true branch (the
//! local stack has a Meta app); a condition this reader does not know never
//! holds, so an unknown condition refuses rather than allows.

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml_ng::Value;

use super::calls::{Call, Need};
use super::resolve::Resolver;
use crate::template::TOKEN_KEY;

/// One statement, resolved.
#[derive(Debug, Clone)]
pub(super) struct Statement {
    pub(super) allow: bool,
    pub(super) actions: Vec<String>,
    pub(super) resources: Vec<String>,
    /// `(operator, key, accepted values)`.
    pub(super) conditions: Vec<(String, String, Vec<String>)>,
}

/// A grant a test may or may not use: who, what, on what.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Grant {
    /// The function (`SyncWorkerFunction`), or `TokenKey` for the key policy.
    pub principal: String,
    pub policy: String,
    pub action: String,
    pub resource: String,
}

/// Why a call is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub action: String,
    pub resource: String,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {}: {}", self.action, self.resource, self.reason)
    }
}

/// Every role and the key policy of one template.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Function logical id → its role's logical id.
    roles: BTreeMap<String, String>,
    /// Role logical id → its statements.
    role_statements: BTreeMap<String, Vec<Statement>>,
    /// Role logical id (or `root`) → the key policy's statements for it.
    key_statements: BTreeMap<String, Vec<Statement>>,
}

pub(super) fn untag(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) => &t.value,
        other => other,
    }
}

pub(super) fn tag(v: &Value) -> Option<String> {
    match v {
        Value::Tagged(t) => Some(t.tag.to_string().trim_start_matches('!').to_owned()),
        _ => None,
    }
}

pub(super) fn list(v: &Value) -> Vec<&Value> {
    match untag(v) {
        Value::Sequence(s) => s.iter().collect(),
        Value::Null => vec![],
        _ => vec![v],
    }
}

/// The canonical ARN of a logical resource, by its type.
pub fn canonical(kind: &str, logical: &str) -> String {
    match kind {
        "AWS::DynamoDB::Table" => format!("arn:aws:dynamodb:::table/{logical}"),
        "AWS::SQS::Queue" => format!("arn:aws:sqs:::{logical}"),
        "AWS::Events::EventBus" => format!("arn:aws:events:::event-bus/{logical}"),
        "AWS::S3::Bucket" => format!("arn:aws:s3:::{logical}"),
        "AWS::KMS::Key" => format!("arn:aws:kms:::key/{logical}"),
        "AWS::IAM::Role" => format!("arn:aws:iam:::role/{logical}"),
        // Parameters hold ARNs of resources outside the stack (the secret).
        _ => format!("ref:{logical}"),
    }
}

/// `*` and `?` globbing, as IAM matches actions and ARNs.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi].eq_ignore_ascii_case(&t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

impl Statement {
    fn matches(
        &self,
        need: &Need,
        resource: &str,
        context: &BTreeMap<String, String>,
    ) -> Option<(String, String)> {
        let action = self.actions.iter().find(|a| glob(a, &need.action))?;
        let granted = self.resources.iter().find(|r| glob(r, resource))?;
        self.conditions
            .iter()
            .all(|(op, key, values)| {
                let actual = match key.strip_prefix("kms:EncryptionContext:") {
                    Some(k) => context.get(k).cloned(),
                    // The cloud is reached over TLS.
                    None if key == "aws:SecureTransport" => Some("true".into()),
                    None => None,
                };
                let Some(actual) = actual else {
                    return false;
                };
                match op.as_str() {
                    "StringEquals" | "Bool" => values.contains(&actual),
                    "StringLike" => values.iter().any(|v| glob(v, &actual)),
                    _ => false,
                }
            })
            .then(|| (action.clone(), granted.clone()))
    }
}

impl Policy {
    /// Reads every function's role and the key policies of a template.
    pub fn from_template(raw: &Value) -> Self {
        let Some(resources) = raw["Resources"].as_mapping() else {
            return Self::default();
        };
        let resolver = Resolver { resources };
        let mut policy = Self::default();
        for (id, r) in resources {
            let Some(id) = id.as_str() else { continue };
            match r["Type"].as_str() {
                Some("AWS::Serverless::Function") => {
                    if let Some(role) = resolver.resolve(&r["Properties"]["Role"]).first() {
                        let role = role.rsplit('/').next().unwrap_or_default().to_owned();
                        policy.roles.insert(id.to_owned(), role);
                    }
                }
                Some("AWS::IAM::Role") => {
                    let statements = list(&r["Properties"]["Policies"])
                        .into_iter()
                        .flat_map(|p| resolver.statements(&untag(p)["PolicyDocument"]))
                        .map(|(_, s)| s)
                        .collect();
                    policy.role_statements.insert(id.to_owned(), statements);
                }
                // Only the token key's policy speaks to the functions.
                Some("AWS::KMS::Key") if id == TOKEN_KEY => {
                    for (principal, s) in resolver.statements(&r["Properties"]["KeyPolicy"]) {
                        let who = principal
                            .map(|p| resolver.resolve(&p["AWS"]))
                            .unwrap_or_default();
                        for w in who {
                            let key = if w.ends_with(":root") {
                                "root".to_owned()
                            } else {
                                w.rsplit('/').next().unwrap_or_default().to_owned()
                            };
                            policy
                                .key_statements
                                .entry(key)
                                .or_default()
                                .push(s.clone());
                        }
                    }
                }
                _ => {}
            }
        }
        policy
    }

    /// The functions this policy knows.
    pub fn functions(&self) -> impl Iterator<Item = &str> {
        self.roles.keys().map(String::as_str)
    }

    /// Judges one need of one call: the grants that allow it, or why not.
    ///
    /// `resource` is the need's canonical ARN.
    pub fn judge(
        &self,
        function: &str,
        need: &Need,
        resource: &str,
        call: &Call,
    ) -> Result<Vec<Grant>, Refusal> {
        let refuse = |reason: String| Refusal {
            action: need.action.clone(),
            resource: resource.to_owned(),
            reason,
        };
        let role = self
            .roles
            .get(function)
            .ok_or_else(|| refuse(format!("{function} has no role in the template")))?;
        let judge = |statements: Option<&Vec<Statement>>| {
            let mut grants = vec![];
            for s in statements.into_iter().flatten() {
                if let Some(m) = s.matches(need, resource, &call.context) {
                    if !s.allow {
                        return Err(());
                    }
                    grants.push(m);
                }
            }
            Ok(grants)
        };
        let grant = |policy: &str, principal: &str, (action, resource): (String, String)| Grant {
            principal: principal.to_owned(),
            policy: policy.to_owned(),
            action,
            resource,
        };
        let denied = |by: &str| refuse(format!("an explicit Deny in {by}"));
        let own = judge(self.role_statements.get(role)).map_err(|()| denied(role))?;
        if !need.action.starts_with("kms:") {
            return if own.is_empty() {
                Err(refuse(format!(
                    "no statement of {role} allows it (add {} on {resource} to {role})",
                    need.action
                )))
            } else {
                Ok(own.into_iter().map(|m| grant(role, function, m)).collect())
            };
        }
        // KMS: the key policy decides; it delegates to IAM policies only
        // through a statement for the account's root.
        let key = judge(self.key_statements.get(role)).map_err(|()| denied("the key policy"))?;
        if !key.is_empty() {
            return Ok(key
                .into_iter()
                .map(|m| grant(TOKEN_KEY, function, m))
                .collect());
        }
        let delegated =
            judge(self.key_statements.get("root")).map_err(|()| denied("the key policy"))?;
        if !delegated.is_empty() && !own.is_empty() {
            return Ok(own.into_iter().map(|m| grant(role, function, m)).collect());
        }
        let context: Vec<String> = call
            .context
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        Err(refuse(format!(
            "the key policy has no statement for {role} allowing it with encryption context {{{}}}",
            context.join(", ")
        )))
    }

    /// Every grant the template makes, to list those no test used.
    pub fn grants(&self) -> BTreeSet<Grant> {
        let mut all = BTreeSet::new();
        for (function, role) in &self.roles {
            let mut add = |policy: &str, statements: Option<&Vec<Statement>>| {
                for s in statements.into_iter().flatten().filter(|s| s.allow) {
                    for action in &s.actions {
                        for resource in &s.resources {
                            all.insert(Grant {
                                principal: function.clone(),
                                policy: policy.to_owned(),
                                action: action.clone(),
                                resource: resource.clone(),
                            });
                        }
                    }
                }
            };
            add(role, self.role_statements.get(role));
            add(TOKEN_KEY, self.key_statements.get(role));
        }
        all
    }
}
