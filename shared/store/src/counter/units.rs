//! DynamoDB's request units of one request, from its JSON: a write
//! counts 1 KB units of each item it puts (an update or a delete: of its
//! key and values, at least one; DynamoDB counts the whole item, so an
//! item past 1 KB is under-counted, which `largest_item` shows), twice in
//! a transaction; a read counts 4 KB units of what it returns (a query:
//! of all its items together), half when eventually consistent.

use aws_smithy_types::config_bag::{Storable, StoreReplace};
use serde_json::Value;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Units {
    pub(crate) write: f64,
    pub(crate) read: f64,
    pub(crate) largest_item: usize,
}

/// How a request's answer is counted: which reads it made, and whether
/// they were strongly consistent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Read {
    None,
    Get { consistent: bool },
    Query { consistent: bool },
    Batch,
}

impl Storable for Read {
    type Storer = StoreReplace<Self>;
}

fn kb_units(bytes: usize, unit: usize) -> f64 {
    bytes.div_ceil(unit).max(1) as f64
}

impl Units {
    /// Counts a request's writes; answers how its answer's reads count.
    pub(crate) fn request(&mut self, operation: &str, body: &[u8]) -> Read {
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let consistent = json["ConsistentRead"].as_bool().unwrap_or(false);
        match operation {
            "PutItem" => self.put(&json["Item"], 1.0),
            "UpdateItem" | "DeleteItem" => self.keyed(&json, 1.0),
            "BatchWriteItem" => {
                for requests in json["RequestItems"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    for r in requests.as_array().into_iter().flatten() {
                        match r.get("PutRequest") {
                            Some(p) => self.put(&p["Item"], 1.0),
                            None => self.keyed(&r["DeleteRequest"], 1.0),
                        }
                    }
                }
            }
            "TransactWriteItems" => {
                for t in json["TransactItems"].as_array().into_iter().flatten() {
                    if let Some(p) = t.get("Put") {
                        self.put(&p["Item"], 2.0);
                    } else if let Some(c) = t.get("ConditionCheck") {
                        // A condition check reads its item, transactionally.
                        self.read += 2.0 * kb_units(item_size(&c["Key"]), 4_096);
                    } else if let Some(w) = t.get("Update").or_else(|| t.get("Delete")) {
                        self.keyed(w, 2.0);
                    }
                }
            }
            "GetItem" => return Read::Get { consistent },
            "Query" | "Scan" => return Read::Query { consistent },
            "BatchGetItem" => return Read::Batch,
            _ => {}
        }
        Read::None
    }

    /// Counts what an answer read.
    pub(crate) fn response(&mut self, read: &Read, body: &[u8]) {
        let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let half = |consistent: bool| if consistent { 1.0 } else { 0.5 };
        match read {
            Read::None => {}
            Read::Get { consistent } => {
                self.read += half(*consistent) * kb_units(item_size(&json["Item"]), 4_096);
            }
            Read::Query { consistent } => {
                let bytes = json["Items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(item_size)
                    .sum();
                self.read += half(*consistent) * kb_units(bytes, 4_096);
            }
            Read::Batch => {
                for items in json["Responses"]
                    .as_object()
                    .into_iter()
                    .flat_map(|m| m.values())
                {
                    for item in items.as_array().into_iter().flatten() {
                        self.read += 0.5 * kb_units(item_size(item), 4_096);
                    }
                }
            }
        }
    }

    fn put(&mut self, item: &Value, factor: f64) {
        let size = item_size(item);
        self.largest_item = self.largest_item.max(size);
        self.write += factor * kb_units(size, 1_024);
    }

    /// An update's or a delete's units, of its key and values.
    fn keyed(&mut self, request: &Value, factor: f64) {
        let size = item_size(&request["Key"]) + item_size(&request["ExpressionAttributeValues"]);
        self.write += factor * kb_units(size, 1_024);
    }
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
}
