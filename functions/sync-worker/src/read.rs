//! Reading a range of spend from Meta, split in halves while Meta has more
//! rows than one call reads, and saving each part's rows under the run's
//! lease as the next comes (the last one with the run's ending).

use std::collections::BTreeMap;
use std::time::Instant;

use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::dates::{LocalDate, day_start};
use adtrail_domain::graph_error::Usage;
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::money::Currency;
use adtrail_domain::plan::DateRange;
use adtrail_domain::spend::{RowChange, SpendFigures, spend_changes};
use adtrail_meta::{Insights, too_much_data};
use adtrail_store::StoreError;
use adtrail_store::lease::LeaseCondition;
use adtrail_store::spend::{EndWith, SpendWrite};

use crate::Worker;
use crate::catalog::entry_of_row;
use crate::run::{RunReport, Stop, learn};

/// Reads of one part when other executions of the run keep writing its
/// rows first.
const SAVE_TRIES: usize = 3;

/// A range read, split while Meta has too much data.
pub(crate) struct Part {
    pub(crate) range: DateRange,
    pub(crate) rows: Vec<adtrail_meta::SpendRow>,
    pub(crate) complete: bool,
}

/// What a run keeps of a part once it is saved: the days it covers and
/// whether Meta gave them whole. Its rows are dropped then, so a run holds
/// two parts' rows at most (the one not written yet and the one just read,
/// at most one call's each, 20,000), however many parts its block takes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartRead {
    pub(crate) range: DateRange,
    pub(crate) complete: bool,
}

/// Where a run's parts go as they are read: saved under its lease, and
/// learnt into the catalog it builds.
pub(crate) struct Saving<'a> {
    pub(crate) cond: &'a LeaseCondition,
    pub(crate) report: &'a mut RunReport,
    pub(crate) catalog: BTreeMap<String, CatalogEntry>,
    pub(crate) read: Vec<PartRead>,
    /// The latest day Meta listed any ad's figures for.
    pub(crate) latest: Option<LocalDate>,
    /// The last part read, not written yet: the run's ending writes it
    /// (with the ending itself, when it can: see `run/finish.rs`), so a
    /// part stays unwritten only until the next one comes or the run ends.
    pub(crate) unwritten: Option<Part>,
}

impl Worker {
    /// A range's spend, split in halves while Meta has more rows than one
    /// call reads, down to single days. A day still over the cap keeps what
    /// came (`complete: false`): nothing is inferred from what it lacks.
    /// Each part is saved as the next one comes, and the last by the run's
    /// ending, so what was read stays saved whatever stops the reading.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn read_range(
        &self,
        token: &str,
        link: &SiteAdAccount,
        currency: &Currency,
        range: DateRange,
        stop_reads_at: Instant,
        usage: &mut Usage,
        saving: &mut Saving<'_>,
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
                _ => {
                    let part = Part {
                        range,
                        rows,
                        complete,
                    };
                    if let Some(before) = saving.unwritten.take() {
                        self.save_part(saving.cond, &before, saving.report).await?;
                    }
                    for row in &part.rows {
                        learn(&mut saving.catalog, entry_of_row(row));
                        saving.latest = saving.latest.max(Some(row.date));
                    }
                    saving.read.push(PartRead { range, complete });
                    saving.unwritten = Some(part);
                }
            }
        }
        Ok(())
    }

    /// Writes one part's rows as the domain's [`spend_changes`] decides:
    /// rows that did not change are not written again, and, when Meta gave
    /// the whole part, stored rows Meta no longer lists are dropped. When
    /// another execution of the run wrote a row first, the part is read
    /// again and what is left written. The first read is eventually
    /// consistent (half the units; the write checks every row it changes
    /// against a strong read), the ones after a refused write strong.
    pub(crate) async fn save_part(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        for attempt in 0..SAVE_TRIES {
            match self
                .save_part_once(cond, part, report, attempt > 0, None)
                .await?
            {
                SpendWrite::Written | SpendWrite::Ended => return Ok(()),
                SpendWrite::LostLease => return Err(Stop::LostLease),
                SpendWrite::Stale => continue,
            }
        }
        Err(Stop::Store(StoreError::Condition(
            "spend rows kept changing under this run",
        )))
    }

    /// [`Worker::save_part`]'s first try, ending the run in its last
    /// transaction as `end` decides (see [`Spend::write_spend_ending`]).
    /// Anything but [`SpendWrite::Ended`] leaves the ending to the caller,
    /// and a part not written to [`Worker::save_part`].
    ///
    /// [`Spend::write_spend_ending`]: adtrail_store::Spend::write_spend_ending
    pub(crate) async fn save_part_ending(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
        end: EndWith<'_>,
    ) -> Result<SpendWrite, Stop> {
        self.save_part_once(cond, part, report, false, Some(end))
            .await
    }

    async fn save_part_once(
        &self,
        cond: &LeaseCondition,
        part: &Part,
        report: &mut RunReport,
        consistent: bool,
        end: Option<EndWith<'_>>,
    ) -> Result<SpendWrite, Stop> {
        let stored = self
            .store
            .spend()
            .rows_to_change(
                cond.site_id(),
                cond.ad_account_id(),
                day_start(part.range.since),
                day_start(part.range.until),
                consistent,
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
        let written = self
            .store
            .spend()
            .write_spend_ending(cond, &changes, end)
            .await?;
        // Counted once written: a refused try's changes are computed again.
        if matches!(written, SpendWrite::Written | SpendWrite::Ended) {
            for change in &changes {
                match change {
                    RowChange::Put { .. } => report.rows_written += 1,
                    RowChange::Delete { .. } => report.rows_dropped += 1,
                }
            }
        }
        Ok(written)
    }
}
