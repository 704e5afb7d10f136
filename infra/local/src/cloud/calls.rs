//! Reads an AWS request off the wire into what IAM judges: the service, the
//! SDK operation, and for each part of it the IAM action and the resource it
//! acts on (plus the KMS encryption context). Working from the HTTP request
//! rather than the SDK's typed input means one reader serves every client.
//!
//! DynamoDB authorises a transaction item by item (`PutItem`,
//! `UpdateItem`, `DeleteItem`, `ConditionCheckItem`, `GetItem`), and SQS's
//! batch operations by their single-message action; both are spelled out
//! here as AWS's service authorization reference lists them.

use std::collections::BTreeMap;

use serde_json::Value;

/// A resource named by its physical name, as the request carries it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    Table { name: String, index: Option<String> },
    Queue { url: String },
    Key { id: String },
    Bus { name: String },
    Object { bucket: String, key: Option<String> },
    Secret { id: String },
}

/// One IAM check a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// `dynamodb:PutItem`.
    pub action: String,
    pub target: Target,
}

/// A request, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `dynamodb`, `sqs`, `kms`, `events`, `s3`, `secretsmanager`.
    pub service: &'static str,
    /// The SDK operation: `TransactWriteItems`.
    pub operation: String,
    pub needs: Vec<Need>,
    /// KMS's encryption context (empty elsewhere).
    pub context: BTreeMap<String, String>,
}

/// The JSON protocols name their operation in `X-Amz-Target`.
const TARGET_PREFIXES: &[(&str, &str)] = &[
    ("DynamoDB_20120810.", "dynamodb"),
    ("AmazonSQS.", "sqs"),
    ("TrentService.", "kms"),
    ("AWSEvents.", "events"),
    ("secretsmanager.", "secretsmanager"),
];

/// Reads one request. `None` for a request this reader does not know (it
/// is then refused: the local stack grants nothing it cannot judge).
pub fn read(method: &str, uri: &str, target: Option<&str>, body: &[u8]) -> Option<Call> {
    let Some(target) = target else {
        return s3(method, uri);
    };
    let (service, operation) = TARGET_PREFIXES
        .iter()
        .find_map(|(prefix, service)| Some((*service, target.strip_prefix(prefix)?)))?;
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let needs = match service {
        "dynamodb" => dynamodb(operation, &body),
        "sqs" => sqs(operation, &body),
        "kms" => vec![Need {
            action: format!("kms:{operation}"),
            target: Target::Key {
                id: text(&body["KeyId"]),
            },
        }],
        "events" => events(operation, &body),
        _ => vec![Need {
            action: format!("secretsmanager:{operation}"),
            target: Target::Secret {
                id: text(&body["SecretId"]),
            },
        }],
    };
    let context = body["EncryptionContext"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), text(v))).collect())
        .unwrap_or_default();
    Some(Call {
        service,
        operation: operation.to_owned(),
        needs,
        context,
    })
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

fn table(name: &str, index: Option<&Value>) -> Target {
    Target::Table {
        name: name.to_owned(),
        index: index.and_then(Value::as_str).map(str::to_owned),
    }
}

fn dynamodb(operation: &str, body: &Value) -> Vec<Need> {
    let need = |action: &str, target: Target| Need {
        action: format!("dynamodb:{action}"),
        target,
    };
    match operation {
        "TransactWriteItems" | "TransactGetItems" => body["TransactItems"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                let (kind, part) = item.as_object()?.iter().next()?;
                let action = match kind.as_str() {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    _ => "GetItem",
                };
                Some(need(action, table(part["TableName"].as_str()?, None)))
            })
            .collect(),
        "BatchGetItem" | "BatchWriteItem" => body["RequestItems"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(name, _)| need(operation, table(name, None)))
            .collect(),
        _ => vec![need(
            operation,
            table(
                body["TableName"].as_str().unwrap_or_default(),
                body.get("IndexName"),
            ),
        )],
    }
}

fn sqs(operation: &str, body: &Value) -> Vec<Need> {
    // The batch forms are authorised as their single-message action.
    let action = operation.strip_suffix("Batch").unwrap_or(operation);
    vec![Need {
        action: format!("sqs:{action}"),
        target: Target::Queue {
            url: text(&body["QueueUrl"]),
        },
    }]
}

fn events(operation: &str, body: &Value) -> Vec<Need> {
    let mut buses: Vec<String> = body["Entries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["EventBusName"].as_str().unwrap_or("default").to_owned())
        .collect();
    buses.sort();
    buses.dedup();
    buses
        .into_iter()
        .map(|name| Need {
            action: format!("events:{operation}"),
            target: Target::Bus { name },
        })
        .collect()
}

/// S3 speaks REST: path-style `/{bucket}/{key}` locally.
fn s3(method: &str, uri: &str) -> Option<Call> {
    let path = uri
        .split_once("://")
        .map_or(uri, |(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]));
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    // An object's tags are a subresource with actions of their own.
    let tagging = query
        .split('&')
        .any(|p| p == "tagging" || p.starts_with("tagging="));
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let bucket = parts.next().filter(|b| !b.is_empty())?.to_owned();
    let key = parts.next().filter(|k| !k.is_empty()).map(|k| {
        percent_encoding::percent_decode_str(k)
            .decode_utf8_lossy()
            .into_owned()
    });
    let (operation, action) = match (method, key.is_some()) {
        ("PUT", true) if tagging => ("PutObjectTagging", "s3:PutObjectTagging"),
        ("GET", true) if tagging => ("GetObjectTagging", "s3:GetObjectTagging"),
        ("PUT", true) => ("PutObject", "s3:PutObject"),
        ("GET" | "HEAD", true) => ("GetObject", "s3:GetObject"),
        ("DELETE", true) => ("DeleteObject", "s3:DeleteObject"),
        ("GET", false) => ("ListObjects", "s3:ListBucket"),
        _ => return None,
    };
    Some(Call {
        service: "s3",
        operation: operation.to_owned(),
        needs: vec![Need {
            action: action.to_owned(),
            target: Target::Object { bucket, key },
        }],
        context: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_tags_are_their_own_actions() {
        let need = |method, uri| s3(method, uri).map(|c| c.needs[0].action.clone());
        assert_eq!(
            need("PUT", "http://127.0.0.1:1/b/thumbnails/s/1?tagging"),
            Some("s3:PutObjectTagging".into())
        );
        assert_eq!(
            need("GET", "http://127.0.0.1:1/b/thumbnails/s/1?tagging"),
            Some("s3:GetObjectTagging".into())
        );
        assert_eq!(
            need("PUT", "http://127.0.0.1:1/b/thumbnails/s/1?x-id=PutObject"),
            Some("s3:PutObject".into())
        );
    }

    #[test]
    fn a_transaction_needs_each_items_action() {
        let body = serde_json::json!({"TransactItems": [
            {"Put": {"TableName": "t"}},
            {"ConditionCheck": {"TableName": "t"}},
            {"Update": {"TableName": "t"}},
        ]});
        let call = read(
            "POST",
            "http://x/",
            Some("DynamoDB_20120810.TransactWriteItems"),
            body.to_string().as_bytes(),
        )
        .expect("read");
        let actions: Vec<&str> = call.needs.iter().map(|n| n.action.as_str()).collect();
        assert_eq!(
            actions,
            [
                "dynamodb:PutItem",
                "dynamodb:ConditionCheckItem",
                "dynamodb:UpdateItem"
            ]
        );
    }

    #[test]
    fn queries_name_their_index_and_batches_their_single_action() {
        let q = read(
            "POST",
            "http://x/",
            Some("DynamoDB_20120810.Query"),
            br#"{"TableName":"t","IndexName":"owner"}"#,
        )
        .expect("read");
        assert_eq!(q.needs[0].target, table("t", Some(&Value::from("owner"))));
        let d = read(
            "POST",
            "http://x/",
            Some("AmazonSQS.DeleteMessageBatch"),
            br#"{"QueueUrl":"http://q/1/send"}"#,
        )
        .expect("read");
        assert_eq!(d.needs[0].action, "sqs:DeleteMessage");
        let k = read(
            "POST",
            "http://x/",
            Some("TrentService.Decrypt"),
            br#"{"KeyId":"k","EncryptionContext":{"purpose":"p"}}"#,
        )
        .expect("read");
        assert_eq!(k.context.get("purpose").map(String::as_str), Some("p"));
        let s = read("PUT", "http://h:5/b/thumbnails/a%20b.jpg?x=1", None, b"").expect("read");
        assert_eq!(
            s.needs[0].target,
            Target::Object {
                bucket: "b".into(),
                key: Some("thumbnails/a b.jpg".into())
            }
        );
    }
}
