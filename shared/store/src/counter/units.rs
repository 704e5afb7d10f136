//! DynamoDB's request units of one request, from its JSON: a write
//! counts 1 KB units of each item it puts (an update or a delete: of its
//! key and values, at least one; DynamoDB counts the whole item, so an
//! item past 1 KB is under-counted, which `largest_item` shows), twice in
//! a transaction; a read counts 4 KB units of what it returns (a query:
//! of all its items together), half when eventually consistent.
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
}

/// How a request's answer is counted: which reads it made, whether they
/// were strongly consistent, and under which label.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    kind: ReadKind,
    consistent: bool,
    label: String,
}

#[derive(Debug, Clone, Copy)]
enum ReadKind {
    None,
    Get,
    Query,
    Batch,
}

impl Storable for Read {
    type Storer = StoreReplace<Self>;
}

fn kb_units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

/// The family of an item from its key: `conv` for `conv#loja-x`.
fn family(key: &Value) -> &str {
    let pk = key["pk"]["S"].as_str().unwrap_or("?");
    pk.split('#').next().unwrap_or(pk)
}

impl Units {
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
        let read = |kind, consistent, label: String| Read {
            kind,
            consistent,
            label,
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
            "PutItem" => self.put(&label, &json["Item"], 1.0),
            "UpdateItem" | "DeleteItem" => self.keyed(&label, &json, 1.0),
            "BatchWriteItem" => {
                for requests in json["RequestItems"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    for r in requests.as_array().into_iter().flatten() {
                        match r.get("PutRequest") {
                            Some(p) => {
                                let label = format!("BatchPut {}", family(&p["Item"]));
                                self.put(&label, &p["Item"], 1.0);
                            }
                            None => {
                                let d = &r["DeleteRequest"];
                                self.keyed(&format!("BatchDelete {}", family(&d["Key"])), d, 1.0);
                            }
                        }
                    }
                }
            }
            "TransactWriteItems" => {
                for t in json["TransactItems"].as_array().into_iter().flatten() {
                    if let Some(p) = t.get("Put") {
                        self.put(&format!("TxPut {}", family(&p["Item"])), &p["Item"], 2.0);
                    } else if let Some(c) = t.get("ConditionCheck") {
                        // A condition check reads its item, transactionally.
                        let units = 2.0 * kb_units(item_size(&c["Key"]), 4_096);
                        self.book(&format!("TxCheck {}", family(&c["Key"])), 0.0, units);
                    } else if let Some((verb, w)) = t
                        .get("Update")
                        .map(|w| ("TxUpdate", w))
                        .or_else(|| t.get("Delete").map(|w| ("TxDelete", w)))
                    {
                        self.keyed(&format!("{verb} {}", family(&w["Key"])), w, 2.0);
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
                return read(ReadKind::Batch, consistent, format!("BatchGet {family}"));
            }
            _ => {}
        }
        read(ReadKind::None, false, label)
    }

    /// Counts what an answer read.
    pub(crate) fn response(&mut self, read: &Read, body: &[u8]) {
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
            ReadKind::Batch => json["Responses"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
                .flat_map(|items| items.as_array().into_iter().flatten())
                .map(|item| half * kb_units(item_size(item), 4_096))
                .sum(),
        };
        if units > 0.0 {
            self.book(&read.label, 0.0, units);
        }
    }

    fn put(&mut self, label: &str, item: &Value, factor: f64) {
        let size = item_size(item);
        self.largest_item = self.largest_item.max(size);
        let entries = INDEXES
            .iter()
            .filter(|(_, hash, range)| item.get(*hash).is_some() && item.get(*range).is_some())
            .count() as f64;
        self.book(label, factor * kb_units(size, 1_024) + entries, 0.0);
    }

    /// An update's or a delete's units, of its key and values, and an
    /// update's index entries.
    fn keyed(&mut self, label: &str, request: &Value, factor: f64) {
        let size = item_size(&request["Key"]) + item_size(&request["ExpressionAttributeValues"]);
        let units = factor * kb_units(size, 1_024) + update_index_writes(request);
        self.book(label, units, 0.0);
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
    let names = &request["ExpressionAttributeNames"];
    let resolve = |token: &str| {
        let attribute = token.split(['.', '[']).next().unwrap_or(token).trim();
        names
            .get(attribute)
            .and_then(Value::as_str)
            .unwrap_or(attribute)
            .to_owned()
    };
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

/// An update expression's clauses: `(SET|REMOVE|ADD|DELETE, body)`.
fn clauses(expression: &str) -> Vec<(String, &str)> {
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
fn top_level(text: &str, sep: char) -> Vec<&str> {
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

/// An item's size as DynamoDB counts it: each attribute's name and value
/// (strings and binary by their bytes, numbers about a byte per two digits,
/// lists and maps their elements with a few bytes of overhead).
pub(crate) fn item_size(item: &Value) -> usize {
    item.as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| name.len() + value_size(value))
        .sum()
}

fn value_size(v: &Value) -> usize {
    let Some((kind, inner)) = v.as_object().and_then(|o| o.iter().next()) else {
        return 0;
    };
    let text = |t: &Value| t.as_str().map_or(0, str::len);
    match kind.as_str() {
        "S" => text(inner),
        "N" => text(inner) / 2 + 1,
        "B" => text(inner) * 3 / 4,
        "BOOL" | "NULL" => 1,
        "SS" | "NS" | "BS" => inner.as_array().into_iter().flatten().map(text).sum(),
        "L" => {
            3 + inner
                .as_array()
                .into_iter()
                .flatten()
                .map(value_size)
                .sum::<usize>()
        }
        "M" => 3 + item_size(inner),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_count_kilobytes_twice_in_a_transaction_and_reads_four() {
        let mut u = Units::default();
        let small = r#"{"Item": {"pk": {"S": "a"}, "n": {"N": "12"}}}"#;
        u.request("PutItem", small.as_bytes());
        assert_eq!(u.write, 1.0);
        let big = format!(r#"{{"Item": {{"pk": {{"S": "{}"}}}}}}"#, "x".repeat(1_500));
        u.request("PutItem", big.as_bytes());
        assert_eq!(u.write, 3.0, "1.5 KB is two units");
        let tx = r#"{"TransactItems": [{"Put": {"Item": {"pk": {"S": "a"}}}},
            {"Update": {"Key": {"pk": {"S": "b"}}}}]}"#;
        u.request("TransactWriteItems", tx.as_bytes());
        assert_eq!(u.write, 7.0, "each of a transaction's two items twice");
        let read = u.request("Query", br#"{"ConsistentRead": false}"#);
        let answer = format!(
            r#"{{"Items": [{{"pk": {{"S": "{}"}}}}]}}"#,
            "y".repeat(5_000)
        );
        u.response(&read, answer.as_bytes());
        assert_eq!(u.read, 1.0, "two 4 KB units, halved");
        assert!(u.largest_item >= 1_500);
    }

    fn update(expression: &str, condition: &str) -> f64 {
        let mut u = Units::default();
        let request = serde_json::json!({
            "Key": {"pk": {"S": "a"}},
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#status": "status", "#at": "workAt"},
        });
        u.request("UpdateItem", request.to_string().as_bytes());
        u.write - 1.0
    }

    #[test]
    fn index_entries_count_a_unit_each_written_and_two_moved() {
        let mut u = Units::default();
        let put = r#"{"Item": {"pk": {"S": "conv#s"}, "workShard": {"S": "send#1"}, "workAt": {"N": "5"}}}"#;
        u.request("PutItem", put.as_bytes());
        assert_eq!(u.write, 2.0, "the item and its work entry");
        let half = r#"{"Item": {"pk": {"S": "a"}, "workShard": {"S": "send#1"}}}"#;
        u.request("PutItem", half.as_bytes());
        assert_eq!(u.write, 3.0, "half an index key is no entry");
        assert_eq!(
            update("SET attempts = :n, workAt = :t", "#status = :p"),
            2.0
        );
        assert_eq!(update("SET a = :a, #at = if_not_exists(#at, :t)", ""), 2.0);
        assert_eq!(
            update("SET #status = :s REMOVE leaseId, workShard, workAt", ""),
            1.0
        );
        assert_eq!(
            update(
                "SET nextSyncAt = :n, dueShard = :d",
                "attribute_not_exists(dueShard)"
            ),
            1.0,
            "a new entry"
        );
        assert_eq!(
            update("SET runId = :r REMOVE dueShard", "attribute_exists(pk)"),
            1.0
        );
        assert_eq!(update("SET a = :a ADD leads :l", ""), 0.0);
        assert_eq!(
            update("set nextSyncAt = :n remove gsi1pk", ""),
            3.0,
            "both indexes, whatever the verbs' case"
        );
    }
}
