//! Every entity's item, declared once: one struct per entity with its
//! attribute names, mapped to and from DynamoDB by `serde_dynamo`, and
//! converted to and from the domain's type. A missing attribute is an error
//! ([`StoreError::Malformed`]), not a silent default; an optional one is an
//! `Option`. The few `#[serde(default)]`s are flags and counters whose
//! absence means `false` or `0` (they are added by `ADD`, or came later).
//!
//! Keys and index attributes (`pk`, `sk`, `gsi1pk`, …) are built by
//! `keys.rs`; an item struct carries them only where the store writes the
//! whole item.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::attr::Item;
use crate::error::StoreError;

/// Reads an item as `T`. The error names the entity and, for a missing
/// attribute, the attribute; never a value (items hold hashes and sealed
/// tokens).
pub(crate) fn decode<T: DeserializeOwned>(item: &Item, entity: &str) -> Result<T, StoreError> {
    serde_dynamo::from_item(item.clone()).map_err(|e| {
        let text = e.to_string();
        let why = match text.strip_prefix("missing field ") {
            Some(field) => format!("{entity}: missing {field}"),
            None => format!("{entity}: an attribute is of another type"),
        };
        StoreError::Malformed(why)
    })
}

/// Writes `T` as an item.
pub(crate) fn encode<T: Serialize>(value: &T, entity: &str) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value)
        .map_err(|_| StoreError::Malformed(format!("{entity}: could not be written")))
}

/// A small JSON document kept in one string attribute (a listing, a board,
/// the lead's references), so one read brings it whole.
pub(super) mod json_text {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        serde_json::to_string(value)
            .map_err(S::Error::custom)?
            .serialize(s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(D::Error::custom)
    }
}

/// `json_text` for an optional attribute.
pub(super) mod json_text_opt {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => super::json_text::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        #[derive(Deserialize)]
        struct Text(#[serde(with = "super::json_text")] serde_json::Value);
        match Option::<Text>::deserialize(d)? {
            None => Ok(None),
            Some(Text(v)) => serde_json::from_value(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

pub(super) fn parse<T>(value: Option<T>, entity: &str, attribute: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError::Malformed(format!("{entity}: unknown {attribute}")))
}

mod conversions;
mod destinations;
mod forms;
mod pages;
mod setup;
mod spend;
#[cfg(test)]
mod tests;

pub(crate) use conversions::{ConversionItem, LeadItem, MATCH_ATTRIBUTES, uncounted_as};
pub(crate) use destinations::DestinationItem;
pub(crate) use forms::{FormItem, FormLeadItem, FormLeadRefItem, RulesItem};
pub(crate) use pages::{PageItem, PageLinkItem};
pub(crate) use setup::{BoardItem, ConnectionItem, LinkItem, NewLinkItem, PixelItem, SiteItem};
pub(crate) use spend::{CatalogItem, FiguresItem};
