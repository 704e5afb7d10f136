//! Conversions after they are queued: the send lease the `capi-sender`
//! takes on each attempt, how an attempt ends (sent, retried, failed) with
//! the counters moved in the same transaction, the sweeper's view of lost
//! sends, the site's history newest first, and the sharded counters.
//!
//! A conversion is pending while it sits in the `work` index (`send#<n>`,
//! by the time its attempt is due); sent and failed rows leave the index and
//! lose their hashes, and stay as the site's history.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};

use crate::attr::{FromItem, Item, get_n, get_s, s};
use crate::items::{ConversionItem, decode};
use crate::keys::{
    COUNT_SHARDS, COUNT_TOTAL_SK, SK, conv_pk, count_day_sk, count_pk, parse_count_day_sk,
};
use crate::{Conversions, StoreError};

use adtrail_domain::destinations::slug_or_pixel;

impl FromItem for Conversion {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<ConversionItem>(item, "conversion")?.try_into()
    }
}

/// Which rows a filtered history keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// A destination's slug (`meta`: the pixel).
    pub destination: Option<String>,
    pub failed_only: bool,
}

/// Rows a filtered history reads at most per page asked.
pub const FILTER_BUDGET: usize = 1_000;

/// The counters of a site's conversions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
    /// Accepted by Meta, by UTC day and event.
    pub days: BTreeMap<i64, BTreeMap<EventName, i64>>,
    /// Each destination's totals, by slug (the pixel's as `meta`).
    pub destinations: BTreeMap<String, Totals>,
}

/// Pending, sent and failed rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub pending: i64,
    pub sent: i64,
    pub failed: i64,
}

/// Rows queued, sent and failed on a day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flow {
    pub queued: i64,
    pub sent: i64,
    pub failed: i64,
}

/// A destination's rows queued, sent and failed by UTC day and event.
pub type DayMetrics = BTreeMap<i64, BTreeMap<EventName, Flow>>;

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

    /// The site's conversions newest first: one page, at most `limit` rows
    /// (fewer when they reach 1 MB first), strictly before the cursor
    /// (`before` and, for rows created in the same millisecond,
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
        // "#" sorts before every hex digit: `before` alone excludes the
        // whole millisecond.
        let cursor = before.map(|(at, e)| format!("{at:013}#{}", e.unwrap_or("")));
        Ok(self
            .list_conversions_before(site, limit, cursor.as_deref())
            .await?
            .0)
    }

    /// Like [`Conversions::list_conversions`], keeping only the rows of
    /// one destination (`meta`: the pixel's) and/or only failed ones.
    /// Reads at most [`FILTER_BUDGET`] rows; answers the rows and, when it
    /// stopped short with more to read, the reference of the last row it
    /// read (the next page starts before it).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_filtered(
        &self,
        site: &str,
        limit: usize,
        before: Option<(i64, Option<&str>)>,
        filter: &ListFilter,
    ) -> Result<(Vec<Conversion>, Option<String>), StoreError> {
        let mut found = vec![];
        let mut cursor = before.map(|(at, e)| format!("{at:013}#{}", e.unwrap_or("")));
        let mut read = 0;
        loop {
            // DynamoDB says whether more rows follow: a page of fewer than
            // 100 rows is not the end when it reached 1 MB first.
            let (page, more) = self
                .list_conversions_before(site, 100, cursor.as_deref())
                .await?;
            // (A page is empty only at the end: no filter is set here.)
            let end = !more || page.is_empty();
            read += page.len();
            for c in page {
                cursor = Some(c.sk.clone());
                let dest_ok = filter
                    .destination
                    .as_deref()
                    .is_none_or(|d| slug_or_pixel(c.destination.as_deref()) == d);
                let status_ok = !filter.failed_only || c.status == ConversionStatus::Failed;
                if dest_ok && status_ok {
                    found.push(c);
                    if found.len() == limit {
                        return Ok((found, None));
                    }
                }
            }
            if end {
                return Ok((found, None));
            }
            if read >= FILTER_BUDGET {
                return Ok((found, cursor));
            }
        }
    }

    /// One page of the site's rows newest first, before `before_sk`, and
    /// whether DynamoDB has more to give after it.
    async fn list_conversions_before(
        &self,
        site: &str,
        limit: i32,
        before_sk: Option<&str>,
    ) -> Result<(Vec<Conversion>, bool), StoreError> {
        let mut q = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .expression_attribute_values(":pk", s(conv_pk(site)))
            .scan_index_forward(false)
            .limit(limit);
        q = match before_sk {
            None => q.key_condition_expression("pk = :pk"),
            Some(sk) => q
                .key_condition_expression("pk = :pk AND sk < :before")
                .expression_attribute_values(":before", s(sk)),
        };
        let out = q.send().await.map_err(StoreError::ddb)?;
        let rows = out
            .items()
            .iter()
            .map(Conversion::from_item)
            .collect::<Result<_, _>>()?;
        Ok((rows, out.last_evaluated_key.is_some()))
    }

    /// The site's counters: totals, and with `from_day` the events Meta
    /// accepted by day from then on (a query a shard, paged, never a scan:
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
            let query = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk >= :from")
                .expression_attribute_values(":pk", s(count_pk(site, shard)))
                .expression_attribute_values(":from", s(&from))
                .consistent_read(true);
            // Every page: the total sorts after the days, and a long
            // range of days passes 1 MB.
            self.query_all(query)
        });
        let mut counts = Counts::default();
        for items in futures::future::try_join_all(queries).await? {
            for item in &items {
                match get_s(item, SK) {
                    Some(COUNT_TOTAL_SK) => {
                        counts.pending += get_n(item, "pending").unwrap_or(0);
                        counts.sent += get_n(item, "sent").unwrap_or(0);
                        counts.failed += get_n(item, "failed").unwrap_or(0);
                        for (name, value) in item {
                            let Some((slug, what)) = name.split_once('|') else {
                                continue;
                            };
                            let n = value.as_n().ok().and_then(|v| v.parse::<i64>().ok());
                            let t = counts.destinations.entry(slug.to_owned()).or_default();
                            match what {
                                "pending" => t.pending += n.unwrap_or(0),
                                "sent" => t.sent += n.unwrap_or(0),
                                "failed" => t.failed += n.unwrap_or(0),
                                _ => {}
                            }
                        }
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

    /// One destination's rows queued, sent and failed by UTC day and event
    /// over `[from_day, to_day]`: the site's day counters (a query a shard,
    /// paged), never a scan.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn destination_metrics(
        &self,
        site: &str,
        slug: &str,
        from_day: i64,
        to_day: i64,
    ) -> Result<DayMetrics, StoreError> {
        let queries = (0..COUNT_SHARDS).map(|shard| {
            let query = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(count_pk(site, shard)))
                .expression_attribute_values(":from", s(count_day_sk(from_day)))
                .expression_attribute_values(":to", s(count_day_sk(to_day)))
                .consistent_read(true);
            self.query_all(query)
        });
        let prefix = format!("{slug}|");
        let mut metrics = DayMetrics::new();
        for items in futures::future::try_join_all(queries).await? {
            for item in &items {
                let Some(day) = get_s(item, SK).and_then(parse_count_day_sk) else {
                    continue;
                };
                for (name, value) in item {
                    let Some((what, event)) = name
                        .strip_prefix(&prefix)
                        .and_then(|rest| rest.split_once('|'))
                    else {
                        continue;
                    };
                    let (Some(event), Some(n)) = (
                        EventName::parse(event),
                        value.as_n().ok().and_then(|v| v.parse::<i64>().ok()),
                    ) else {
                        continue;
                    };
                    let t = metrics.entry(day).or_default().entry(event).or_default();
                    match what {
                        "queued" => t.queued += n,
                        "sent" => t.sent += n,
                        "failed" => t.failed += n,
                        _ => {}
                    }
                }
            }
        }
        Ok(metrics)
    }
}
