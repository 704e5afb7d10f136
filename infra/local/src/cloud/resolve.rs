//! Resolving the template's intrinsic functions (`!Ref`, `!GetAtt`,
//! `!Sub`, `!If`, `!Join`) in a policy's resources and principals to the
//! canonical names the policy check compares.

use serde_yaml_ng::Value;

use super::policy::{Statement, canonical, list, tag, untag};

pub(super) struct Resolver<'a> {
    pub(super) resources: &'a serde_yaml_ng::Mapping,
}

impl Resolver<'_> {
    pub(super) fn kind(&self, logical: &str) -> String {
        self.resources
            .get(logical)
            .and_then(|r| r["Type"].as_str())
            .unwrap_or("Parameter")
            .to_owned()
    }

    pub(super) fn arn_of(&self, logical: &str) -> String {
        canonical(&self.kind(logical), logical)
    }

    /// A resource or principal expression → zero or more canonical strings.
    pub(super) fn resolve(&self, v: &Value) -> Vec<String> {
        match (tag(v).as_deref(), untag(v)) {
            (Some("GetAtt"), Value::String(s)) => {
                vec![self.arn_of(s.trim_end_matches(".Arn"))]
            }
            (Some("Ref"), Value::String(s)) if s == "AWS::NoValue" => vec![],
            (Some("Ref"), Value::String(s)) => vec![self.arn_of(s)],
            (Some("Sub"), Value::String(s)) => vec![self.substitute(s)],
            (Some("If"), Value::Sequence(parts)) => {
                parts.get(1).map(|p| self.resolve(p)).unwrap_or_default()
            }
            (_, Value::String(s)) => vec![s.clone()],
            (_, Value::Sequence(items)) => items.iter().flat_map(|i| self.resolve(i)).collect(),
            _ => vec![],
        }
    }

    pub(super) fn substitute(&self, s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let Some(end) = rest[start..].find('}') else {
                break;
            };
            let name = &rest[start + 2..start + end];
            out.push_str(&match name.strip_suffix(".Arn") {
                Some(logical) => self.arn_of(logical),
                None if name.starts_with("AWS::") => "*".to_owned(),
                None => self.arn_of(name),
            });
            rest = &rest[start + end + 1..];
        }
        out.push_str(rest);
        out
    }

    pub(super) fn statements(&self, doc: &Value) -> Vec<(Option<Value>, Statement)> {
        list(&doc["Statement"])
            .into_iter()
            .filter_map(|s| {
                // `!If [cond, statement, AWS::NoValue]` holds a statement.
                let s = match (tag(s).as_deref(), untag(s)) {
                    (Some("If"), Value::Sequence(parts)) => parts.get(1)?,
                    _ => s,
                };
                let s = untag(s);
                let conditions = s["Condition"]
                    .as_mapping()
                    .into_iter()
                    .flatten()
                    .flat_map(|(op, pairs)| {
                        pairs.as_mapping().into_iter().flatten().map(move |(k, v)| {
                            (
                                op.as_str().unwrap_or_default().to_owned(),
                                k.as_str().unwrap_or_default().to_owned(),
                                list(v)
                                    .into_iter()
                                    .filter_map(|x| match untag(x) {
                                        Value::String(s) => Some(s.clone()),
                                        Value::Bool(b) => Some(b.to_string()),
                                        _ => None,
                                    })
                                    .collect(),
                            )
                        })
                    })
                    .collect();
                let principal = s.get("Principal").cloned();
                Some((
                    principal,
                    Statement {
                        allow: s["Effect"].as_str() == Some("Allow"),
                        actions: list(&s["Action"])
                            .into_iter()
                            .filter_map(|a| untag(a).as_str().map(str::to_owned))
                            .collect(),
                        resources: list(&s["Resource"])
                            .into_iter()
                            .flat_map(|r| self.resolve(r))
                            .collect(),
                        conditions,
                    },
                ))
            })
            .collect()
    }
}
