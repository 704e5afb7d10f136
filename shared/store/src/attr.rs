//! Small writers and readers of single DynamoDB attribute values, for keys
//! and expression values; whole items are declared in `items/`.

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

/// Reads a domain type from its item. The domain's types are foreign here,
/// so the store maps them through this trait rather than inherent methods.
pub(crate) trait FromItem: Sized {
    fn from_item(item: &Item) -> Result<Self, StoreError>;
}
