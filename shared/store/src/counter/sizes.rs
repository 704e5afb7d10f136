//! The size of each item the counted clients wrote, as DynamoDB holds it,
//! so an update, a delete or a condition check is priced by its item, not
//! by its request. DynamoDB bills an update by the larger of the item
//! before and after it, a put that replaces an item the same way, a delete
//! by the item it removes: an `ADD` of one counter to a 3 KB item costs 3
//! units, not 1. moto keeps the items but reports no capacity, so the
//! counter keeps its own model of each item's attributes (name and value
//! sizes) from the writes it sees, applies a write's change once its answer
//! says it succeeded, and survives [`super::RequestCounter::reset`]: the
//! items outlive the counts. It holds at most [`MAX_ITEMS`] items.
//!
//! An update's new values are sized from the expression's values: `SET a
//! = :v` is `:v`'s size, `SET a = a + :v` or `if_not_exists(a, :v)` on an
//! existing `a` keeps the larger of the two, `list_append` and a set's `ADD`
//! grow the attribute, `REMOVE` and a set's `DELETE` shrink it. An item the
//! counter never saw written (put before counting began, by another
//! client) is taken to hold only what the request names.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::units::{attribute_of, clauses, top_level};

/// One item's attributes: name → the attribute's size (name and value).
pub(crate) type Attributes = BTreeMap<String, usize>;

/// A write's effect on one item, applied when the write succeeded.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// The item now holds these attributes.
    Holds(String, Attributes),
    /// The item is gone.
    Gone(String),
}

/// Items the model holds at most: the bench writes tens of thousands; a
/// `make local` left running under load stops adding past this (about
/// 100 MB), and an item it never saw is sized from its request.
const MAX_ITEMS: usize = 100_000;

/// Every item written through the counter, by table and key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sizes {
    items: HashMap<String, Attributes>,
}

/// An item's identity: its table and its whole key (`pk`, `sk`).
pub(crate) fn identity(table: &str, key_or_item: &Value) -> String {
    let part = |name: &str| {
        key_or_item
            .get(name)
            .and_then(|v| v.as_object())
            .and_then(|o| o.values().next())
            .map_or_else(String::new, ToString::to_string)
    };
    format!("{table}\u{0}{}\u{0}{}", part("pk"), part("sk"))
}

/// An item's attributes from its JSON.
pub(crate) fn attributes(item: &Value) -> Attributes {
    item.as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| (name.clone(), name.len() + value_size(value)))
        .collect()
}

fn total(attributes: &Attributes) -> usize {
    attributes.values().sum()
}

impl Sizes {
    /// The item's size now, if the counter saw it written.
    pub(crate) fn size(&self, id: &str) -> Option<usize> {
        self.items.get(id).map(total)
    }

    /// A put's (before, after) sizes and its change.
    pub(crate) fn put(&self, id: String, item: &Value) -> (usize, usize, Change) {
        let after = attributes(item);
        let before = self.size(&id).unwrap_or(0);
        (before, total(&after), Change::Holds(id, after))
    }

    /// A delete's size (the item it removes; its key if unseen) and change.
    pub(crate) fn delete(&self, id: String, key: &Value) -> (usize, Change) {
        let size = self.size(&id).unwrap_or_else(|| item_size(key));
        (size, Change::Gone(id))
    }

    /// An update's (before, after) sizes and its change: the item as the
    /// counter holds it (or its key alone), with the expression applied.
    pub(crate) fn update(&self, id: String, request: &Value) -> (usize, usize, Change) {
        let mut item = self
            .items
            .get(&id)
            .cloned()
            .unwrap_or_else(|| attributes(&request["Key"]));
        let before = total(&item);
        let values = &request["ExpressionAttributeValues"];
        let resolve = |token: &str| attribute_of(request, token);
        // The sizes of the values a part of the expression names.
        let named = |text: &str| -> usize {
            text.split(|c: char| !(c.is_alphanumeric() || c == ':' || c == '_'))
                .filter(|t| t.starts_with(':'))
                .map(|t| value_size(&values[t]))
                .sum()
        };
        for (verb, body) in clauses(request["UpdateExpression"].as_str().unwrap_or("")) {
            for part in top_level(body, ',') {
                let (target, expr) = match verb.as_str() {
                    "SET" => part.split_once('=').unwrap_or((part, "")),
                    _ => part
                        .trim()
                        .split_once(char::is_whitespace)
                        .unwrap_or((part, "")),
                };
                let name = resolve(target);
                let old = item.get(&name).copied();
                let new = named(expr);
                // A list appended to, or a path inside a map or a list.
                let grows = verb == "SET"
                    && (expr.trim_start().starts_with("list_append")
                        || target.contains(['.', '[']));
                let size = match (verb.as_str(), old) {
                    ("REMOVE", _) => None,
                    ("DELETE", Some(old)) => Some(old.saturating_sub(new)),
                    ("DELETE", None) => None,
                    ("ADD", Some(old)) if is_set(values, expr) => Some(old + new),
                    (_, Some(old)) if grows => Some(old + new),
                    // `a + :v`, `if_not_exists(a, :v)`, a number's `ADD`.
                    (_, Some(old)) if verb == "ADD" || mentions(expr, target, &name) => {
                        Some(old.max(name.len() + new))
                    }
                    _ => Some(name.len() + new),
                };
                match size {
                    Some(size) => item.insert(name, size),
                    None => item.remove(&name),
                };
            }
        }
        let after = total(&item);
        (before, after, Change::Holds(id, item))
    }

    /// Makes a succeeded write's change.
    pub(crate) fn apply(&mut self, change: Change) {
        match change {
            Change::Holds(id, attributes)
                if self.items.len() < MAX_ITEMS || self.items.contains_key(&id) =>
            {
                self.items.insert(id, attributes);
            }
            Change::Holds(..) => {}
            Change::Gone(id) => {
                self.items.remove(&id);
            }
        }
    }
}

/// Whether an `ADD`'s value is a set (it grows the attribute) rather than a
/// number (it keeps about its size).
fn is_set(values: &Value, expr: &str) -> bool {
    let token = expr.trim();
    values[token]
        .as_object()
        .and_then(|o| o.keys().next())
        .is_some_and(|kind| matches!(kind.as_str(), "SS" | "NS" | "BS"))
}

/// Whether a `SET`'s right side reads the attribute it sets.
fn mentions(expr: &str, target: &str, name: &str) -> bool {
    let target = target.trim();
    expr.split(|c: char| !(c.is_alphanumeric() || matches!(c, '#' | '_' | ':')))
        .filter(|t| !t.is_empty() && !t.starts_with(':'))
        .any(|t| t == target || t == name)
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
    use serde_json::json;

    use super::*;

    fn update(sizes: &Sizes, expression: &str, values: Value) -> (usize, usize, Change) {
        let request = json!({
            "Key": {"pk": {"S": "count#s"}, "sk": {"S": "total"}},
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {"#c0": "pending", "#l": "list"},
            "ExpressionAttributeValues": values,
        });
        sizes.update(identity("t", &request["Key"]), &request)
    }

    #[test]
    fn an_update_is_sized_by_its_item_before_and_after() {
        let mut sizes = Sizes::default();
        let item = json!({"pk": {"S": "count#s"}, "sk": {"S": "total"},
            "blob": {"S": "x".repeat(2_000)}});
        let (before, after, change) = sizes.put(identity("t", &item), &item);
        assert_eq!(before, 0, "a new item");
        assert!(after > 2_000);
        sizes.apply(change);
        let (before, after, change) = update(&sizes, "ADD #c0 :c0", json!({":c0": {"N": "1"}}));
        assert_eq!(before, sizes.size(&identity("t", &item)).unwrap());
        assert!(after > 2_000, "an ADD to a 2 KB item is a write of 2 KB");
        sizes.apply(change);
        let (_, again, _) = update(&sizes, "ADD #c0 :c0", json!({":c0": {"N": "1"}}));
        assert_eq!(again, after, "a number added to keeps its size");
        let (_, removed, _) = update(&sizes, "REMOVE blob", json!({}));
        assert!(removed < 100, "REMOVE drops the attribute");
        let (_, set, _) = update(&sizes, "SET blob = :b", json!({":b": {"S": "y"}}));
        assert!(set < 100, "SET replaces the value");
        let (_, kept, _) = update(
            &sizes,
            "SET blob = if_not_exists(blob, :b)",
            json!({":b": {"S": "y"}}),
        );
        assert!(kept > 2_000, "if_not_exists keeps what is there");
    }

    #[test]
    fn the_model_stops_growing_at_its_bound_and_still_follows_its_items() {
        let mut sizes = Sizes::default();
        for i in 0..=MAX_ITEMS {
            sizes.apply(Change::Holds(i.to_string(), Attributes::new()));
        }
        assert_eq!(sizes.items.len(), MAX_ITEMS);
        sizes.apply(Change::Holds(
            "7".into(),
            attributes(&json!({"a": {"S": "xyz"}})),
        ));
        assert_eq!(sizes.size("7"), Some(4), "an item it holds still changes");
    }

    #[test]
    fn lists_and_sets_grow_and_an_unseen_item_is_its_key_and_values() {
        let sizes = Sizes::default();
        let (before, after, _) = update(
            &sizes,
            "SET #l = list_append(#l, :v) ADD tags :t",
            json!({":v": {"L": [{"S": "abc"}]}, ":t": {"SS": ["q", "r"]}}),
        );
        assert_eq!(
            before,
            "pk".len() + "count#s".len() + "sk".len() + "total".len()
        );
        assert_eq!(after, before + "list".len() + 6 + "tags".len() + 2);
        let key = json!({"pk": {"S": "a"}, "sk": {"S": "b"}});
        let (size, _) = sizes.delete(identity("t", &key), &key);
        assert_eq!(size, 6, "an unseen item's delete is sized by its key");
    }
}
