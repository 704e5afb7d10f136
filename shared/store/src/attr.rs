//! Small readers and writers of DynamoDB attribute values, so the item
//! mappings stay one line per field.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::error::StoreError;

pub type Item = HashMap<String, AttributeValue>;

pub fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}
pub fn b(v: bool) -> AttributeValue {
    AttributeValue::Bool(v)
}

pub fn get_s<'a>(item: &'a Item, key: &str) -> Option<&'a str> {
    item.get(key)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
}
pub fn get_n(item: &Item, key: &str) -> Option<i64> {
    item.get(key)
        .and_then(|v| v.as_n().ok())
        .and_then(|t| t.parse().ok())
}
pub fn get_bool(item: &Item, key: &str) -> bool {
    item.get(key)
        .and_then(|v| v.as_bool().ok())
        .copied()
        .unwrap_or(false)
}
pub fn need_s(item: &Item, key: &str) -> Result<String, StoreError> {
    get_s(item, key)
        .map(str::to_owned)
        .ok_or_else(|| StoreError::Malformed(format!("missing {key}")))
}

/// Reads a domain type from its item. The domain's types are foreign here,
/// so the store maps them through this trait rather than inherent methods.
pub(crate) trait FromItem: Sized {
    fn from_item(item: &Item) -> Result<Self, StoreError>;
}
