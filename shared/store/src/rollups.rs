//! What the reports read of leads: the cohort counters by day and
//! dimension, the ads that brought leads lately, and the distinct leads
//! that entered each board column.

use std::collections::BTreeMap;

use adtrail_domain::metrics::Counters;

use crate::attr::{get_n, get_s, n, s};
use crate::keys::{RollupDim, SK, day_sk, entry_pk, lead_ad_pk, rollup_pk};
use crate::{Leads, StoreError};

/// One rollup row: a site's cohort counters of one UTC day and one
/// dimension (`o#<origin>` or `a#<adId>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollupRow {
    pub day_start: i64,
    pub dim: RollupDim,
    pub counters: Counters,
}

impl Leads<'_> {
    /// The rollup rows (one per day and dimension) of the site's days
    /// `from_day..=to_day`, at most `cap`; answers whether the cap cut them.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn rollup_rows(
        &self,
        site: &str,
        from_day: i64,
        to_day: i64,
        cap: usize,
    ) -> Result<(Vec<RollupRow>, bool), StoreError> {
        let mut rows = vec![];
        let mut capped = false;
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(rollup_pk(site)))
            .expression_attribute_values(":from", s(day_sk(from_day)))
            .expression_attribute_values(":to", s(format!("{}~", day_sk(to_day))));
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                let (Some(day_start), Some(dim)) = (
                    get_n(item, "dayStart"),
                    get_s(item, "dim").and_then(RollupDim::parse),
                ) else {
                    continue;
                };
                if rows.len() >= cap {
                    capped = true;
                    return Ok(false);
                }
                rows.push(RollupRow {
                    day_start,
                    dim,
                    counters: Counters {
                        leads: get_n(item, "leads").unwrap_or(0),
                        qualified: get_n(item, "qualified").unwrap_or(0),
                        won: get_n(item, "won").unwrap_or(0),
                        revenue_cents: get_n(item, "revenueCents").unwrap_or(0),
                    },
                });
            }
            Ok(true)
        })
        .await?;
        Ok((rows, capped))
    }

    /// The ads that brought the site a lead since `since`, at most `max`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn recent_lead_ads(
        &self,
        site: &str,
        since: i64,
        max: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut ads = vec![];
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .filter_expression("lastLeadAt >= :since")
            .expression_attribute_values(":pk", s(lead_ad_pk(site)))
            .expression_attribute_values(":since", n(since));
        // Bounded: one site's ads, a few pages at most.
        self.query_pages(query, 10, |items| {
            ads.extend(items.iter().filter_map(|i| get_s(i, SK).map(str::to_owned)));
            Ok(ads.len() < max)
        })
        .await?;
        ads.truncate(max);
        Ok(ads)
    }

    /// The distinct leads that entered each column on the UTC days
    /// `from_day..=to_day` (a lead that came back counts once).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn column_counts(
        &self,
        site: &str,
        columns: &[String],
        from_day: i64,
        to_day: i64,
    ) -> Result<BTreeMap<String, i64>, StoreError> {
        let queries = columns.iter().map(|column| async move {
            let mut leads = std::collections::HashSet::new();
            let query = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(entry_pk(site, column)))
                .expression_attribute_values(":from", s(day_sk(from_day)))
                .expression_attribute_values(":to", s(format!("{}~", day_sk(to_day))))
                .projection_expression("leadId");
            // Bounded: at most 200 pages of 1 MB.
            self.query_pages(query, 200, |items| {
                leads.extend(
                    items
                        .iter()
                        .filter_map(|i| get_s(i, "leadId").map(str::to_owned)),
                );
                Ok(true)
            })
            .await?;
            Ok::<_, StoreError>((column.clone(), leads.len() as i64))
        });
        futures::future::join_all(queries)
            .await
            .into_iter()
            .collect()
    }
}
