//! Reading a range of spend from Meta, split in halves while Meta has more
//! rows than one call reads, and saving each part's rows under the run's
//! lease.

use std::time::Instant;

use adtrail_domain::dates::day_start;
use adtrail_domain::graph_error::Usage;
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::money::Currency;
use adtrail_domain::plan::DateRange;
use adtrail_domain::spend::{RowChange, SpendFigures, spend_changes};
use adtrail_meta::{Insights, too_much_data};
use adtrail_store::StoreError;
use adtrail_store::lease::LeaseCondition;
use adtrail_store::spend::SpendWrite;

use crate::Worker;
use crate::run::{RunReport, Stop};

/// Reads of one part when other executions of the run keep writing its
/// rows first.
const SAVE_TRIES: usize = 3;

/// A range read, split while Meta has too much data.
pub(crate) struct Part {
    pub(crate) range: DateRange,
    pub(crate) rows: Vec<adtrail_meta::SpendRow>,
    pub(crate) complete: bool,
}

impl Worker {
    /// A range's spend, split in halves while Meta has more rows than one
    /// call reads, down to single days. A day still over the cap keeps what
    /// came (`complete: false`): nothing is inferred from what it lacks.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn read_range(
        &self,
        token: &str,
        link: &SiteAdAccount,
        currency: &Currency,
        range: DateRange,
        stop_reads_at: Instant,
        usage: &mut Usage,
        parts: &mut Vec<Part>,
    ) -> Result<(), Stop> {
        let mut pending = vec![range];
        while let Some(range) = pending.pop() {
            if Instant::now() >= stop_reads_at {
                return Err(Stop::OutOfTime);
            }
            let result = self
                .graph
                .insights(token, &link.ad_account_id, currency, range)
                .await;
            let (rows, complete) = match result {
                Ok(Insights {
                    rows,
                    complete,
                    usage: u,
                }) => {
                    *usage = usage.merge(u);
                    (rows, complete)
                }
                Err(e) if too_much_data(&e) => (vec![], false),
                Err(e) => return Err(Stop::Graph(e)),
            };
            match (complete, range.halves()) {
                (false, Some((first, second))) => {
                    // Read the earlier half first.
                    pending.push(second);
                    pending.push(first);
                }
                _ => parts.push(Part {
                    range,
                    rows,
                    complete,
                }),
            }
        }
        Ok(())
    }

    /// Writes one part's rows as the domain's [`spend_changes`] decides:
    /// rows that did not change are not written again, and, when Meta gave
    /// the whole part, stored rows Meta no longer lists are dropped. When
    /// another execution of the run wrote a row first, the part is read
    /// again and what is left written.
    pub(crate) async fn save_part(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        for _ in 0..SAVE_TRIES {
            match self.save_part_once(cond, part, report).await? {
                SpendWrite::Written => return Ok(()),
                SpendWrite::LostLease => return Err(Stop::LostLease),
                SpendWrite::Stale => continue,
            }
        }
        Err(Stop::Store(StoreError::Condition(
            "spend rows kept changing under this run",
        )))
    }

    async fn save_part_once(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
    ) -> Result<SpendWrite, Stop> {
        let (stored, _) = self
            .store
            .spend()
            .spend_rows(
                cond.site_id(),
                cond.ad_account_id(),
                day_start(part.range.since),
                day_start(part.range.until),
                usize::MAX,
            )
            .await?;
        let fresh = part.rows.iter().map(|row| {
            let figures = SpendFigures {
                spend_cents: row.spend_cents,
                impressions: row.impressions,
                clicks: row.clicks,
            };
            (day_start(row.date), row.ad_id.clone(), figures)
        });
        let changes = spend_changes(stored, fresh, part.complete, self.clock.now_ms());
        for change in &changes {
            match change {
                RowChange::Put { .. } => report.rows_written += 1,
                RowChange::Delete { .. } => report.rows_dropped += 1,
            }
        }
        Ok(self.store.spend().write_spend(cond, &changes).await?)
    }
}
