//! Conversions after they are queued: the send lease the `capi-sender`
//! takes on each attempt, how an attempt ends (sent, retried, failed) with
//! the counters moved in the same transaction, the sweeper's view of lost
//! sends, the site's history newest first, and the sharded counters.
//!
//! A conversion is pending while it sits in the `work` index (`send#<n>`,
//! by the time its attempt is due); sent and failed rows leave the index and
//! lose their hashes, and stay as the site's history.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, EventName};
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

use crate::attr::{FromItem, Item, get_n, get_s, n, s};
use crate::items::{ConversionItem, decode};
use crate::keys::{
    COUNT_SHARDS, COUNT_TOTAL_SK, PK, SK, conv_pk, count_day_sk, count_pk, parse_count_day_sk,
};
use crate::{Conversions, StoreError};

impl FromItem for Conversion {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<ConversionItem>(item, "conversion")?.try_into()
    }
}

/// An `ADD` to one counter item (`day`: a day item, else the totals).
pub(crate) fn counter_update(
    table: &str,
    site: &str,
    shard: u32,
    deltas: &[(&str, i64)],
    day: Option<i64>,
) -> Result<TransactWriteItem, StoreError> {
    let mut update = Update::builder()
        .table_name(table)
        .key(PK, s(count_pk(site, shard)))
        .key(
            SK,
            s(day.map_or_else(|| COUNT_TOTAL_SK.to_owned(), count_day_sk)),
        );
    let mut parts = vec![];
    for (i, (name, delta)) in deltas.iter().enumerate() {
        parts.push(format!("#c{i} :c{i}"));
        update = update
            .expression_attribute_names(format!("#c{i}"), *name)
            .expression_attribute_values(format!(":c{i}"), n(*delta));
    }
    Ok(TransactWriteItem::builder()
        .update(
            update
                .update_expression(format!("ADD {}", parts.join(", ")))
                .build()
                .map_err(StoreError::ddb)?,
        )
        .build())
}

/// The counters of a site's conversions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
    /// Accepted by Meta, by UTC day and event.
    pub days: BTreeMap<i64, BTreeMap<EventName, i64>>,
}

impl Conversions<'_> {
    /// Rows by sort key, strongly read.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_conversions(
        &self,
        site: &str,
        sks: &[String],
    ) -> Result<Vec<Conversion>, StoreError> {
        let keys = sks.iter().map(|sk| (conv_pk(site), sk.clone())).collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(Conversion::from_item)
            .collect()
    }

    /// The site's conversions newest first: `limit` rows strictly before
    /// the cursor (`before` and, for rows created in the same millisecond,
    /// `before_event_id`).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_conversions(
        &self,
        site: &str,
        limit: i32,
        before: Option<(i64, Option<&str>)>,
    ) -> Result<Vec<Conversion>, StoreError> {
        let mut q = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .expression_attribute_values(":pk", s(conv_pk(site)))
            .scan_index_forward(false)
            .limit(limit);
        q = match before {
            None => q.key_condition_expression("pk = :pk"),
            Some((at, event)) => q
                .key_condition_expression("pk = :pk AND sk < :before")
                .expression_attribute_values(
                    ":before",
                    // "#" sorts before every hex digit: `before` alone
                    // excludes the whole millisecond.
                    s(format!("{at:013}#{}", event.unwrap_or(""))),
                ),
        };
        let out = q.send().await.map_err(StoreError::ddb)?;
        out.items().iter().map(Conversion::from_item).collect()
    }

    /// The site's counters: totals, and with `from_day` the events Meta
    /// accepted by day from then on (8 queries, one a shard, never a scan:
    /// `day#…` sorts before `total`, so one range reads both).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn conversion_counts(
        &self,
        site: &str,
        from_day: Option<i64>,
    ) -> Result<Counts, StoreError> {
        let from = from_day.map_or_else(|| COUNT_TOTAL_SK.to_owned(), count_day_sk);
        let queries = (0..COUNT_SHARDS).map(|shard| {
            self.ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk >= :from")
                .expression_attribute_values(":pk", s(count_pk(site, shard)))
                .expression_attribute_values(":from", s(&from))
                .consistent_read(true)
                .send()
        });
        let mut counts = Counts::default();
        for out in futures::future::join_all(queries).await {
            let out = out.map_err(StoreError::ddb)?;
            for item in out.items() {
                match get_s(item, SK) {
                    Some(COUNT_TOTAL_SK) => {
                        counts.pending += get_n(item, "pending").unwrap_or(0);
                        counts.sent += get_n(item, "sent").unwrap_or(0);
                        counts.failed += get_n(item, "failed").unwrap_or(0);
                    }
                    Some(sk) => {
                        let Some(day) = parse_count_day_sk(sk) else {
                            continue;
                        };
                        let by_event = counts.days.entry(day).or_default();
                        for e in EventName::ALL {
                            *by_event.entry(e).or_default() += get_n(item, e.as_str()).unwrap_or(0);
                        }
                    }
                    None => {}
                }
            }
        }
        Ok(counts)
    }
}
