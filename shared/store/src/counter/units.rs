//! DynamoDB's request units of one request, from its JSON: a write
//! counts 1 KB units of each item it writes, twice in a transaction (a put
//! or an update: the larger of the item before and after it; a delete: the
//! item it removes; a transaction's condition check: the item it checks,
//! as a write; [`super::sizes`] keeps each item's size); a read counts
//! 4 KB units of what it returns (a query: of all its items together), half
//! when eventually consistent.
//!
//! A write also pays for each index entry it writes, at the standard rate
//! (an index is updated after the transaction, not in it): a put of an item
//! that has an index's keys writes its entry; an update that removes an
//! index key deletes the entry (one unit), and one that sets an index key
//! moves the entry (two: the old deleted, the new written), or writes a
//! new one when its condition asks that the key not exist yet. The
//! table's entries are small (keys and a few ids), one unit each. A
//! delete's entries are not counted: the item it removes is not in the
//! request.

use std::collections::BTreeMap;

use aws_smithy_types::config_bag::{Storable, StoreReplace};
use serde_json::Value;

use super::sizes::{Change, Sizes, identity, item_size};
use crate::keys::INDEXES;

/// The units so far, in all and by what spent them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Units {
    pub(crate) write: f64,
    pub(crate) read: f64,
    pub(crate) largest_item: usize,
    /// By `<operation> <item family>` (a key's `pk` up to its first `#`,
    /// or the index a query read): write units, read units, requests.
    pub(crate) by: BTreeMap<String, (f64, f64, u64)>,
    /// Each item's size, kept across resets.
    pub(crate) sizes: Sizes,
    /// The request's changes to the items, until its answer comes.
    changes: Vec<Change>,
}

/// How a request's answer is counted: which reads it made, whether they
/// were strongly consistent, and under which label.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    kind: ReadKind,
    consistent: bool,
    label: String,
    /// What the request changes in the items, made if it succeeds.
    changes: Vec<Change>,
}

#[derive(Debug, Clone, Copy)]
enum ReadKind {
    None,
    Get,
    Query,
    /// A `BatchGetItem` of this many keys.
    Batch(usize),
}

impl Storable for Read {
    type Storer = StoreReplace<Self>;
}

fn kb_units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

/// The keys of a `BatchGetItem`'s tables (`RequestItems`,
/// `UnprocessedKeys`).
fn keys_of(tables: &Value) -> usize {
    tables
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|t| t["Keys"].as_array())
        .map(Vec::len)
        .sum()
}

/// The family of an item from its key: `conv` for `conv#loja-x`.
fn family(key: &Value) -> &str {
    let pk = key["pk"]["S"].as_str().unwrap_or("?");
    pk.split('#').next().unwrap_or(pk)
}

impl Units {
    /// The counts from zero again; the items' sizes are still the table's.
    pub(crate) fn restart(&mut self) {
        *self = Units {
            sizes: std::mem::take(&mut self.sizes),
            ..Units::default()
        };
    }

    fn book(&mut self, label: &str, write: f64, read: f64) {
        self.write += write;
        self.read += read;
        let entry = self.by.entry(label.to_owned()).or_default();
        entry.0 += write;
        entry.1 += read;
    }

    /// Counts a request's writes; answers how its answer's reads count.
    pub(crate) fn request(&mut self, operation: &str, body: &[u8]) -> Read {
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let consistent = json["ConsistentRead"].as_bool().unwrap_or(false);
        let table = json["TableName"].as_str().unwrap_or_default().to_owned();
        let read = |kind, consistent, label: String| Read {
            kind,
            consistent,
            label,
            changes: vec![],
        };
        let label = match operation {
            "PutItem" => format!("Put {}", family(&json["Item"])),
            "Query" | "Scan" => match json["IndexName"].as_str() {
                Some(index) => format!("{operation} index {index}"),
                None => format!("{operation} {}", query_family(&json)),
            },
            "GetItem" | "UpdateItem" | "DeleteItem" => {
                format!(
                    "{} {}",
                    operation.trim_end_matches("Item"),
                    family(&json["Key"])
                )
            }
            _ => operation.to_owned(),
        };
        self.by.entry(label.clone()).or_default().2 += 1;
        match operation {
            "PutItem" => self.put(&label, &table, &json["Item"], 1.0),
            "UpdateItem" => self.update(&label, &table, &json, 1.0),
            "DeleteItem" => self.delete(&label, &table, &json["Key"], 1.0),
            "BatchWriteItem" => {
                for (table, requests) in json["RequestItems"].as_object().into_iter().flatten() {
                    for r in requests.as_array().into_iter().flatten() {
                        match r.get("PutRequest") {
                            Some(p) => {
                                let label = format!("BatchPut {}", family(&p["Item"]));
                                self.put(&label, table, &p["Item"], 1.0);
                            }
                            None => {
                                let key = &r["DeleteRequest"]["Key"];
                                let label = format!("BatchDelete {}", family(key));
                                self.delete(&label, table, key, 1.0);
                            }
                        }
                    }
                }
            }
            "TransactWriteItems" => {
                for t in json["TransactItems"].as_array().into_iter().flatten() {
                    let Some((verb, w)) = ["Put", "Update", "Delete", "ConditionCheck"]
                        .into_iter()
                        .find_map(|verb| Some((verb, t.get(verb)?)))
                    else {
                        continue;
                    };
                    let table = w["TableName"].as_str().unwrap_or_default();
                    match verb {
                        "Put" => {
                            self.put(
                                &format!("TxPut {}", family(&w["Item"])),
                                table,
                                &w["Item"],
                                2.0,
                            );
                        }
                        "Update" => {
                            self.update(&format!("TxUpdate {}", family(&w["Key"])), table, w, 2.0);
                        }
                        "Delete" => {
                            self.delete(
                                &format!("TxDelete {}", family(&w["Key"])),
                                table,
                                &w["Key"],
                                2.0,
                            );
                        }
                        _ => {
                            // A condition check writes nothing, yet DynamoDB
                            // bills it as a transaction's write of the item
                            // it checks: 2 write units for an item under a
                            // kilobyte, as real DynamoDB reports it
                            // (`ConsumedCapacity`, characterised by the
                            // paritysuite/dynamodb-conformance suite), not
                            // the 2 read units a transactional read costs.
                            let key = &w["Key"];
                            let size = self
                                .sizes
                                .size(&identity(table, key))
                                .unwrap_or_else(|| item_size(key));
                            let units = 2.0 * kb_units(size, 1_024);
                            self.book(&format!("TxCheck {}", family(key)), units, 0.0);
                        }
                    }
                }
            }
            "GetItem" => return read(ReadKind::Get, consistent, label),
            "Query" | "Scan" => return read(ReadKind::Query, consistent, label),
            "BatchGetItem" => {
                let consistent = json["RequestItems"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                    .any(|t| t["ConsistentRead"].as_bool() == Some(true));
                let family = json["RequestItems"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                    .find_map(|t| t["Keys"].get(0))
                    .map_or("?", family);
                return read(
                    ReadKind::Batch(keys_of(&json["RequestItems"])),
                    consistent,
                    format!("BatchGet {family}"),
                );
            }
            _ => {}
        }
        Read {
            changes: std::mem::take(&mut self.changes),
            ..read(ReadKind::None, false, label)
        }
    }

    /// Counts what an answer read; makes a write's changes if it
    /// succeeded (`ok`).
    pub(crate) fn response(&mut self, read: &Read, body: &[u8], ok: bool) {
        if ok {
            for change in &read.changes {
                self.sizes.apply(change.clone());
            }
        }
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let half = if read.consistent { 1.0 } else { 0.5 };
        let units = match read.kind {
            ReadKind::None => 0.0,
            ReadKind::Get => half * kb_units(item_size(&json["Item"]), 4_096),
            ReadKind::Query => {
                let bytes = json["Items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(item_size)
                    .sum();
                half * kb_units(bytes, 4_096)
            }
            // Each key read as a `GetItem`: one that finds nothing still
            // costs the least a read does. Keys handed back unprocessed
            // were not read.
            ReadKind::Batch(keys) => {
                let found: Vec<&Value> = json["Responses"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                    .flat_map(|items| items.as_array().into_iter().flatten())
                    .collect();
                let unprocessed = keys_of(&json["UnprocessedKeys"]);
                let missed = keys.saturating_sub(found.len() + unprocessed);
                found
                    .iter()
                    .map(|item| half * kb_units(item_size(item), 4_096))
                    .sum::<f64>()
                    + half * missed as f64
            }
        };
        if units > 0.0 {
            self.book(&read.label, 0.0, units);
        }
    }

    /// A put's units: the larger of the item it replaces and its own, and
    /// its index entries.
    fn put(&mut self, label: &str, table: &str, item: &Value, factor: f64) {
        let (before, after, change) = self.sizes.put(identity(table, item), item);
        self.changes.push(change);
        self.largest_item = self.largest_item.max(after);
        let entries = INDEXES
            .iter()
            .filter(|(_, hash, range)| item.get(*hash).is_some() && item.get(*range).is_some())
            .count() as f64;
        self.book(
            label,
            factor * kb_units(before.max(after), 1_024) + entries,
            0.0,
        );
    }

    /// An update's units: the larger of its item before and after it, and
    /// the index entries it writes.
    fn update(&mut self, label: &str, table: &str, request: &Value, factor: f64) {
        let (before, after, change) = self.sizes.update(identity(table, &request["Key"]), request);
        self.changes.push(change);
        self.largest_item = self.largest_item.max(after);
        let units = factor * kb_units(before.max(after), 1_024) + update_index_writes(request);
        self.book(label, units, 0.0);
    }

    /// A delete's units: the item it removes.
    fn delete(&mut self, label: &str, table: &str, key: &Value, factor: f64) {
        let (size, change) = self.sizes.delete(identity(table, key), key);
        self.changes.push(change);
        self.book(label, factor * kb_units(size, 1_024), 0.0);
    }
}

/// The family a query on the table reads: its `:pk` value's, if it names
/// one.
fn query_family(json: &Value) -> &str {
    let values = &json["ExpressionAttributeValues"];
    let pk = values[":pk"]["S"].as_str().unwrap_or("?");
    pk.split('#').next().unwrap_or(pk)
}

/// The index entries an update writes, from the attributes its expression
/// sets and removes and the keys its condition asks to be absent.
fn update_index_writes(request: &Value) -> f64 {
    let resolve = |token: &str| attribute_of(request, token);
    let (mut set, mut removed) = (vec![], vec![]);
    for (verb, body) in clauses(request["UpdateExpression"].as_str().unwrap_or("")) {
        for part in top_level(body, ',') {
            let target = match verb.as_str() {
                "SET" => part.split('=').next().unwrap_or(""),
                _ => part.split_whitespace().next().unwrap_or(""),
            };
            if verb == "REMOVE" {
                removed.push(resolve(target));
            } else {
                set.push(resolve(target));
            }
        }
    }
    let condition = request["ConditionExpression"].as_str().unwrap_or("");
    let absent: Vec<String> = condition
        .split("attribute_not_exists(")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(resolve)
        .collect();
    let touches =
        |list: &[String], hash: &str, range: &str| list.iter().any(|a| a == hash || a == range);
    INDEXES
        .iter()
        .map(|(_, hash, range)| {
            if touches(&removed, hash, range) {
                1.0
            } else if touches(&set, hash, range) {
                if touches(&absent, hash, range) {
                    1.0
                } else {
                    2.0
                }
            } else {
                0.0
            }
        })
        .sum()
}

/// The top-level attribute an expression's path names (`#a.b[0]` → what
/// `#a` stands for).
pub(super) fn attribute_of(request: &Value, token: &str) -> String {
    let attribute = token.split(['.', '[']).next().unwrap_or(token).trim();
    request["ExpressionAttributeNames"]
        .get(attribute)
        .and_then(Value::as_str)
        .unwrap_or(attribute)
        .to_owned()
}

/// An update expression's clauses: `(SET|REMOVE|ADD|DELETE, body)`.
pub(super) fn clauses(expression: &str) -> Vec<(String, &str)> {
    let mut starts = vec![];
    let mut depth = 0usize;
    let bytes = expression.as_bytes();
    for (i, c) in expression.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 && (i == 0 || bytes[i - 1].is_ascii_whitespace()) => {
                for verb in ["SET", "REMOVE", "ADD", "DELETE"] {
                    let rest = &expression[i..];
                    if rest.len() > verb.len()
                        && rest[..verb.len()].eq_ignore_ascii_case(verb)
                        && rest.as_bytes()[verb.len()].is_ascii_whitespace()
                    {
                        starts.push((i, verb));
                    }
                }
            }
            _ => {}
        }
    }
    starts
        .iter()
        .enumerate()
        .map(|(k, (at, verb))| {
            let end = starts
                .get(k + 1)
                .map_or(expression.len(), |(next, _)| *next);
            ((*verb).to_owned(), &expression[at + verb.len()..end])
        })
        .collect()
}

/// `text` split at each `sep` outside parentheses.
pub(super) fn top_level(text: &str, sep: char) -> Vec<&str> {
    let (mut parts, mut depth, mut from) = (vec![], 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            c if c == sep && depth == 0 => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[from..]);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

#[cfg(test)]
#[path = "units_tests.rs"]
mod tests;
