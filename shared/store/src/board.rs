//! A site's board (the host's columns, in order) and its event map (which
//! Meta event each column sends), in one item so a lead change reads both
//! with one request. Writes are optimistic: each carries the version it
//! read, and a concurrent write makes it a [`StoreError::Condition`].

use std::collections::BTreeMap;

use adtrail_domain::board::Board;
use adtrail_domain::capi::EventName;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{FromItem, Item, get_bool, get_n, get_s, n, s};
use crate::keys::{BOARD_SK, PK, SK, site_pk};
use crate::write::applied;
use crate::{Boards, StoreError};

impl FromItem for Board {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let columns = match get_s(item, "columns") {
            Some(json) => Some(
                serde_json::from_str(json)
                    .map_err(|_| StoreError::Malformed("board columns".into()))?,
            ),
            None => None,
        };
        let raw: BTreeMap<String, String> = match get_s(item, "eventMap") {
            Some(json) => {
                serde_json::from_str(json).map_err(|_| StoreError::Malformed("event map".into()))?
            }
            None => BTreeMap::new(),
        };
        let map = raw
            .into_iter()
            .filter_map(|(k, v)| Some((k, EventName::parse_column_event(&v)?)))
            .collect();
        Ok(Self {
            columns,
            map,
            send_lead_event: get_bool(item, "sendLeadEvent"),
            version: get_n(item, "version").unwrap_or(0),
        })
    }
}

impl Boards<'_> {
    /// The site's board (empty when never written).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_board(&self, site: &str) -> Result<Board, StoreError> {
        match self.read_item(site_pk(site), BOARD_SK).await? {
            Some(item) => Board::from_item(&item),
            None => Ok(Board::default()),
        }
    }

    /// Writes `board` over the version it was read at.
    ///
    /// # Errors
    /// [`StoreError::Condition`] when another write came first;
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_board(&self, site: &str, board: &Board, now: i64) -> Result<(), StoreError> {
        let map: BTreeMap<&str, &str> = board
            .map
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut put =
            self.ddb
                .put_item()
                .table_name(&self.names.table)
                .item(PK, s(site_pk(site)))
                .item(SK, s(BOARD_SK))
                .item(
                    "eventMap",
                    s(serde_json::to_string(&map)
                        .map_err(|e| StoreError::Malformed(e.to_string()))?),
                )
                .item("sendLeadEvent", AttributeValue::Bool(board.send_lead_event))
                .item("version", n(board.version + 1))
                .item("updatedAt", n(now));
        if let Some(columns) = &board.columns {
            put = put.item(
                "columns",
                s(serde_json::to_string(columns)
                    .map_err(|e| StoreError::Malformed(e.to_string()))?),
            );
        }
        let put = if board.version == 0 {
            put.condition_expression("attribute_not_exists(pk)")
        } else {
            put.condition_expression("version = :v")
                .expression_attribute_values(":v", n(board.version))
        };
        match applied(put.send().await)? {
            Some(_) => Ok(()),
            None => Err(StoreError::Condition("the board changed meanwhile")),
        }
    }
}
