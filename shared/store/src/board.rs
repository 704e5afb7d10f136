//! A site's board (the host's columns, in order) and its event map (which
//! Meta event each column sends), in one item so a lead change reads both
//! with one request. Writes are optimistic: each carries the version it
//! read, and a concurrent write makes it a [`StoreError::Condition`].

use adtrail_domain::board::Board;

use crate::attr::{FromItem, Item, n};
use crate::items::{BoardItem, decode, encode};
use crate::keys::{BOARD_SK, site_pk};
use crate::write::applied;
use crate::{Boards, StoreError};

impl FromItem for Board {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        Ok(decode::<BoardItem>(item, "board")?.into())
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
        let item = BoardItem::of(board, site_pk(site), BOARD_SK.to_owned(), now);
        let put = self
            .ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(encode(&item, "board")?));
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
