//! The `slot` index's side of the dispatcher: the links at the slots a
//! tick's walk reads, and the cursor saying how far each cadence's walk
//! has come. A link that keeps its cadence stays at one slot, so its runs
//! move no index entry ([`crate::lease`]).

use adtrail_domain::links::Cadence;
use adtrail_domain::slots::SlotRange;
use aws_sdk_dynamodb::types::AttributeValue;

use crate::attr::{get_n, get_s, n, s};
use crate::keys::*;
use crate::write::applied;
use crate::{Links, StoreError};

/// How far each cadence's walk has come: the times up to which its slots
/// were read (`None` before any walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cursor {
    pub interval: Option<i64>,
    pub quiet: Option<i64>,
}

impl Cursor {
    pub fn of(&self, cadence: Cadence) -> Option<i64> {
        match cadence {
            Cadence::Interval => self.interval,
            Cadence::Quiet => self.quiet,
        }
    }
}

/// The cursor's attribute for a cadence.
fn cursor_attribute(cadence: Cadence) -> &'static str {
    match cadence {
        Cadence::Interval => "interval",
        Cadence::Quiet => "quiet",
    }
}

/// A link found at its slot: its site, its ad account and the slot.
pub type SlotLink = (String, String, i64);

/// Where a read of slots stopped, for the next page: DynamoDB's key.
pub type SlotPage = std::collections::HashMap<String, AttributeValue>;

impl Links<'_> {
    /// The links of a cadence at the slots of `range`, in slot order, at
    /// most `limit`, from where the page before stopped (`after`); answers
    /// where this page stopped when more may be left in the range.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn slot_links(
        &self,
        cadence: Cadence,
        range: SlotRange,
        limit: i32,
        after: Option<SlotPage>,
    ) -> Result<(Vec<SlotLink>, Option<SlotPage>), StoreError> {
        let mut query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(SLOT_INDEX)
            .expression_attribute_values(":shard", s(slot_shard(cadence)))
            .expression_attribute_values(":lo", n(range.lo))
            .set_exclusive_start_key(after)
            .limit(limit);
        query = match range.hi {
            Some(hi) => query
                .key_condition_expression("slotShard = :shard AND slot BETWEEN :lo AND :hi")
                .expression_attribute_values(":hi", n(hi)),
            None => query.key_condition_expression("slotShard = :shard AND slot >= :lo"),
        };
        let out = query.send().await.map_err(StoreError::ddb)?;
        let mut links = vec![];
        for item in out.items() {
            let (Some(pk), Some(sk), Some(slot)) =
                (get_s(item, PK), get_s(item, SK), get_n(item, SLOT))
            else {
                continue;
            };
            if let Some((site, acct)) = parse_link_keys(pk, sk) {
                links.push((site.to_owned(), acct.to_owned(), slot));
            }
        }
        Ok((links, out.last_evaluated_key))
    }

    /// The dispatcher's cursor, read strongly: a stale one would only make
    /// a tick read slots again, but each link found again costs a refused
    /// lease.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn dispatch_cursor(&self) -> Result<Cursor, StoreError> {
        let item = self.read_item(DISPATCH_PK.to_owned(), CURSOR_SK).await?;
        let at = |cadence| {
            item.as_ref()
                .and_then(|i| get_n(i, cursor_attribute(cadence)))
        };
        Ok(Cursor {
            interval: at(Cadence::Interval),
            quiet: at(Cadence::Quiet),
        })
    }

    /// Moves the walks on to where `to` says, in one write, unless a
    /// dispatcher at once walked the interval's further: the one that did
    /// keeps its mark (a walk set back only reads slots again).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn advance_cursor(&self, to: Cursor) -> Result<(), StoreError> {
        let (Some(interval), Some(quiet)) = (to.interval, to.quiet) else {
            return Ok(());
        };
        let res = self
            .update_item(DISPATCH_PK, CURSOR_SK)
            .condition_expression("attribute_not_exists(#i) OR #i <= :i")
            .update_expression("SET #i = :i, #q = :q")
            .expression_attribute_names("#i", cursor_attribute(Cadence::Interval))
            .expression_attribute_names("#q", cursor_attribute(Cadence::Quiet))
            .expression_attribute_values(":i", AttributeValue::N(interval.to_string()))
            .expression_attribute_values(":q", AttributeValue::N(quiet.to_string()))
            .send()
            .await;
        applied(res)?;
        Ok(())
    }
}
