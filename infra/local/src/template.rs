//! Reads the stack's resources from `template.yaml`, so the local stack is
//! made from the same definitions as the cloud one and cannot drift.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

/// The logical id of the key that seals every token the functions keep.
pub const TOKEN_KEY: &str = "TokenKey";

/// The template beside the workspace root.
pub fn default_path() -> PathBuf {
    std::env::var_os("ADTRAIL_TEMPLATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml"))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyElement {
    pub name: String,
    /// `HASH` or `RANGE`.
    pub kind: String,
}

#[derive(Debug, Clone)]
pub struct IndexDef {
    pub name: String,
    pub keys: Vec<KeyElement>,
    pub projection: String,
    pub non_key: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct TableDef {
    /// Attribute name → `S`, `N` or `B`.
    pub attributes: BTreeMap<String, String>,
    pub keys: Vec<KeyElement>,
    pub indexes: Vec<IndexDef>,
}

#[derive(Debug, Clone)]
pub struct QueueDef {
    pub logical_id: String,
    pub visibility_timeout: i64,
    pub retention: Option<i64>,
    /// The dead-letter queue's logical id and the receive limit.
    pub redrive: Option<(String, i64)>,
    /// The consuming function's logical id and its batch size.
    pub consumer: Option<(String, i64)>,
    /// The mapping's `MaximumBatchingWindowInSeconds`, in milliseconds.
    pub batching_window_ms: i64,
}

#[derive(Debug, Clone)]
pub struct FunctionDef {
    pub logical_id: String,
    pub timeout: i64,
    pub binary: Option<String>,
}

/// What the local stack needs from the template.
#[derive(Debug, Clone)]
pub struct Template {
    pub table_id: String,
    pub table: TableDef,
    pub queues: Vec<QueueDef>,
    pub functions: Vec<FunctionDef>,
    pub bucket_ids: Vec<String>,
    /// The key that seals tokens (`TOKEN_KEY`), when the template has it.
    pub key_ids: Vec<String>,
    pub bus_ids: Vec<String>,
    pub raw: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot read the template")]
    Read(#[from] std::io::Error),
    #[error("the template is not YAML")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("the template lacks {0}")]
    Missing(String),
}

fn untag(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) => &t.value,
        other => other,
    }
}

fn text(v: &Value) -> Option<String> {
    match untag(v) {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn keys(v: &Value) -> Vec<KeyElement> {
    v.as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|k| {
            Some(KeyElement {
                name: text(&k["AttributeName"])?,
                kind: text(&k["KeyType"])?,
            })
        })
        .collect()
}

/// The table's attributes, keys and indexes from its properties.
fn table_of(p: &Value) -> TableDef {
    TableDef {
        attributes: p["AttributeDefinitions"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|a| Some((text(&a["AttributeName"])?, text(&a["AttributeType"])?)))
            .collect(),
        keys: keys(&p["KeySchema"]),
        indexes: p["GlobalSecondaryIndexes"]
            .as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|g| {
                Some(IndexDef {
                    name: text(&g["IndexName"])?,
                    keys: keys(&g["KeySchema"]),
                    projection: text(&g["Projection"]["ProjectionType"])
                        .unwrap_or_else(|| "ALL".into()),
                    non_key: g["Projection"]["NonKeyAttributes"]
                        .as_sequence()
                        .into_iter()
                        .flatten()
                        .filter_map(text)
                        .collect(),
                })
            })
            .collect(),
    }
}

/// A queue from its properties, with the function whose SQS event reads
/// it (its batch size and batching window).
fn queue_of(id: String, p: &Value, functions: &[(String, &Value)]) -> QueueDef {
    let redrive = p["RedrivePolicy"].as_mapping().and_then(|_| {
        let target = text(&p["RedrivePolicy"]["deadLetterTargetArn"])?;
        Some((
            target.trim_end_matches(".Arn").to_owned(),
            p["RedrivePolicy"]["maxReceiveCount"].as_i64()?,
        ))
    });
    let mut batching_window_ms = 0;
    let consumer = functions.iter().find_map(|(fid, f)| {
        f["Properties"]["Events"]
            .as_mapping()?
            .values()
            .find_map(|e| {
                let source = text(&e["Properties"]["Queue"])?;
                (e["Type"].as_str() == Some("SQS") && source.trim_end_matches(".Arn") == id).then(
                    || {
                        batching_window_ms = e["Properties"]["MaximumBatchingWindowInSeconds"]
                            .as_i64()
                            .unwrap_or(0)
                            * 1_000;
                        (
                            fid.clone(),
                            e["Properties"]["BatchSize"].as_i64().unwrap_or(10),
                        )
                    },
                )
            })
    });
    QueueDef {
        visibility_timeout: p["VisibilityTimeout"].as_i64().unwrap_or(30),
        retention: p["MessageRetentionPeriod"].as_i64(),
        redrive,
        consumer,
        batching_window_ms,
        logical_id: id,
    }
}

impl Template {
    /// # Errors
    /// [`TemplateError`] when the file cannot be read or lacks the table.
    pub fn load(path: &Path) -> Result<Self, TemplateError> {
        let raw: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(path)?)?;
        let resources = raw["Resources"]
            .as_mapping()
            .ok_or_else(|| TemplateError::Missing("Resources".into()))?;
        let of_type = |t: &str| -> Vec<(String, &Value)> {
            resources
                .iter()
                .filter(|(_, r)| r["Type"].as_str() == Some(t))
                .filter_map(|(id, r)| Some((id.as_str()?.to_owned(), r)))
                .collect()
        };
        let (table_id, table) = of_type("AWS::DynamoDB::Table")
            .into_iter()
            .next()
            .ok_or_else(|| TemplateError::Missing("a table".into()))?;
        let table_def = table_of(&table["Properties"]);
        let functions: Vec<(String, &Value)> = of_type("AWS::Serverless::Function");
        let global_timeout = raw["Globals"]["Function"]["Timeout"].as_i64().unwrap_or(3);
        let queues = of_type("AWS::SQS::Queue")
            .into_iter()
            .map(|(id, q)| queue_of(id, &q["Properties"], &functions))
            .collect();
        let functions = functions
            .iter()
            .map(|(id, f)| FunctionDef {
                logical_id: id.clone(),
                timeout: f["Properties"]["Timeout"]
                    .as_i64()
                    .unwrap_or(global_timeout),
                binary: text(&f["Metadata"]["BuildProperties"]["Binary"]),
            })
            .collect();
        let ids = |t: &str| of_type(t).into_iter().map(|(id, _)| id).collect();
        Ok(Self {
            table_id,
            table: table_def,
            queues,
            functions,
            bucket_ids: ids("AWS::S3::Bucket"),
            // The functions seal with one key; the alarm topic's key is
            // CloudWatch's and SNS's business, not the local stack's.
            key_ids: ids("AWS::KMS::Key")
                .into_iter()
                .filter(|id: &String| id == TOKEN_KEY)
                .collect(),
            bus_ids: ids("AWS::Events::EventBus"),
            raw,
        })
    }

    pub fn queue(&self, logical_id: &str) -> Option<&QueueDef> {
        self.queues.iter().find(|q| q.logical_id == logical_id)
    }
    pub fn function(&self, logical_id: &str) -> Option<&FunctionDef> {
        self.functions.iter().find(|f| f.logical_id == logical_id)
    }

    /// Sets a function's `Timeout` (seconds), as a stack's settings may.
    pub fn set_timeout(&mut self, logical_id: &str, seconds: i64) {
        for f in self
            .functions
            .iter_mut()
            .filter(|f| f.logical_id == logical_id)
        {
            f.timeout = seconds;
        }
    }
}
