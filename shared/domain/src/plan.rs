//! What one sync run of an ad account reads from Meta, by the account's state
//! and the time in its own timezone (the seed's `planSync`).
//!
//! - after linking, a 90-day backfill, one 30-day block per run, resumable;
//!   the last block reads the full catalog and counts as the daily and weekly
//!   resync;
//! - then today and yesterday every 45 minutes;
//! - the trailing 7 days and the full catalog on the first run after local
//!   day start + 4 hours;
//! - the trailing 28 days on that daily run once 7 days less 12 hours have
//!   passed since the last one (Meta settles spend within 28 days);
//! - back after a pause of more than 27 days, the gap is backfilled first.

use crate::dates::{LocalDate, Timezone, day_count, shift};
use crate::time::{DAY_MS, HOUR_MS, MINUTE_MS};

pub const SYNC_INTERVAL_MS: i64 = 45 * MINUTE_MS;
pub const LEASE_MS: i64 = 15 * MINUTE_MS;
pub const RETRY_MS: i64 = 15 * MINUTE_MS;
pub const MAX_RETRY_MS: i64 = 6 * HOUR_MS;
pub const PERMISSION_RETRY_MS: i64 = 6 * HOUR_MS;
pub const THROTTLE_BACKOFF_MS: i64 = HOUR_MS;
pub const BACKFILL_NEXT_BLOCK_MS: i64 = 1_000;
/// Above this share of any Meta rate limit, the next sync waits longer.
pub const USAGE_BACKOFF_PCT: u32 = 75;
pub const BACKFILL_DAYS: i64 = 90;
pub const BACKFILL_BLOCK_DAYS: i64 = 30;
pub const GAP_DAYS: i64 = 27;
pub const DAILY_RESYNC_DAYS: i64 = 7;
pub const WEEKLY_RESYNC_DAYS: i64 = 28;
pub const DAILY_RESYNC_HOUR: i64 = 4;
pub const WEEK_MS: i64 = 7 * DAY_MS;
pub const MAX_LINKS_PER_SITE: usize = 20;
pub const MAX_LINKS_PER_CONNECTION: usize = 500;

/// An inclusive range of account-local dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateRange {
    pub since: LocalDate,
    pub until: LocalDate,
}

impl DateRange {
    pub fn days(&self) -> i64 {
        day_count(self.since, self.until)
    }
    /// The two halves of a range of two days or more (the first the shorter
    /// on odd counts, as the seed splits).
    pub fn halves(&self) -> Option<(DateRange, DateRange)> {
        let days = self.days();
        if days < 2 {
            return None;
        }
        let first_until = shift(self.since, days / 2 - 1);
        Some((
            DateRange {
                since: self.since,
                until: first_until,
            },
            DateRange {
                since: shift(first_until, 1),
                until: self.until,
            },
        ))
    }
}

/// The sync cursor of one linked account: what the plan depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncCursor {
    pub timezone: Timezone,
    pub last_sync_at: Option<i64>,
    pub last_daily_resync_at: Option<i64>,
    pub last_full_resync_at: Option<i64>,
    /// Where the backfill resumes; `None` once it ended.
    pub backfill_from: Option<LocalDate>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncPlan {
    Backfill {
        range: DateRange,
        /// The date the next block starts from, `None` on the last block.
        next_from: Option<LocalDate>,
        full_catalog: bool,
    },
    Live {
        range: DateRange,
        full_catalog: bool,
        daily: bool,
        weekly: bool,
    },
}

impl SyncPlan {
    pub fn range(&self) -> DateRange {
        match self {
            Self::Backfill { range, .. } | Self::Live { range, .. } => *range,
        }
    }
    pub fn full_catalog(&self) -> bool {
        match self {
            Self::Backfill { full_catalog, .. } | Self::Live { full_catalog, .. } => *full_catalog,
        }
    }
}

/// What one run of an account reads from Meta.
pub fn plan_sync(cursor: &SyncCursor, now: i64) -> SyncPlan {
    let tz = cursor.timezone;
    let today = tz.local_date(now);
    let earliest = shift(today, -(BACKFILL_DAYS - 1));
    let mut from = cursor.backfill_from;
    // Never synced (whatever failed before): the backfill is still owed.
    if from.is_none() && cursor.last_sync_at.is_none() {
        from = Some(earliest);
    }
    // Back after a long pause: fill the gap before the live cadence resumes.
    if from.is_none()
        && let Some(last) = cursor.last_sync_at
        && now - last > GAP_DAYS * DAY_MS
    {
        from = Some(shift(tz.local_date(last), -1).max(earliest));
    }
    if let Some(from) = from {
        let since = from.max(earliest).min(today);
        let until = shift(since, BACKFILL_BLOCK_DAYS - 1).min(today);
        let last = until == today;
        return SyncPlan::Backfill {
            range: DateRange { since, until },
            next_from: (!last).then(|| shift(until, 1)),
            full_catalog: last,
        };
    }
    let daily_slot = tz.local_hour(now, DAILY_RESYNC_HOUR);
    let daily = now >= daily_slot && cursor.last_daily_resync_at.unwrap_or(0) < daily_slot;
    let weekly = daily && now - cursor.last_full_resync_at.unwrap_or(0) >= WEEK_MS - DAY_MS / 2;
    let days = if weekly {
        WEEKLY_RESYNC_DAYS
    } else if daily {
        DAILY_RESYNC_DAYS
    } else {
        2
    };
    SyncPlan::Live {
        range: DateRange {
            since: shift(today, -(days - 1)),
            until: today,
        },
        full_catalog: daily,
        daily,
        weekly,
    }
}

/// The wait after `failures` failed runs in a row: 15 minutes doubling to 6 h.
pub fn retry_delay(failures: u32) -> i64 {
    let doublings = failures.saturating_sub(1).min(16);
    (RETRY_MS << doublings).min(MAX_RETRY_MS)
}

/// Backfill progress as `{done, total}` 30-day blocks, counted from the
/// account-local date of the link; `None` once the account has synced.
pub fn backfill_progress(
    last_sync_at: Option<i64>,
    backfill_from: Option<LocalDate>,
    linked_at: i64,
    tz: Timezone,
) -> Option<(i64, i64)> {
    if last_sync_at.is_some() {
        return None;
    }
    let total = (BACKFILL_DAYS + BACKFILL_BLOCK_DAYS - 1) / BACKFILL_BLOCK_DAYS;
    let Some(from) = backfill_from else {
        return Some((0, total));
    };
    let start = shift(tz.local_date(linked_at), -(BACKFILL_DAYS - 1));
    let days = (from - start).num_days();
    Some(((days / BACKFILL_BLOCK_DAYS).clamp(0, total - 1), total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dates::parse_date;

    fn ms(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }
    fn d(s: &str) -> LocalDate {
        parse_date(s).unwrap()
    }
    fn cursor(tz: &str) -> SyncCursor {
        SyncCursor {
            timezone: Timezone::parse(tz).unwrap(),
            last_sync_at: None,
            last_daily_resync_at: None,
            last_full_resync_at: None,
            backfill_from: None,
        }
    }

    #[test]
    fn a_new_account_backfills_90_days_in_three_blocks() {
        let now = ms("2026-06-30T12:00:00Z");
        let mut c = cursor("UTC");
        let mut ranges = vec![];
        loop {
            let SyncPlan::Backfill {
                range,
                next_from,
                full_catalog,
            } = plan_sync(&c, now)
            else {
                panic!("expected a backfill")
            };
            ranges.push((
                range.since.to_string(),
                range.until.to_string(),
                full_catalog,
            ));
            match next_from {
                Some(next) => c.backfill_from = Some(next),
                None => break,
            }
        }
        assert_eq!(
            ranges,
            vec![
                ("2026-04-02".into(), "2026-05-01".into(), false),
                ("2026-05-02".into(), "2026-05-31".into(), false),
                ("2026-06-01".into(), "2026-06-30".into(), true),
            ]
        );
    }

    #[test]
    fn the_backfill_uses_the_account_timezone() {
        // 02:00 UTC on July 1st is still June 30th in São Paulo.
        let now = ms("2026-07-01T02:00:00Z");
        let p = plan_sync(&cursor("America/Sao_Paulo"), now);
        assert_eq!(p.range().since, d("2026-04-02"));
        let p = plan_sync(&cursor("Asia/Kathmandu"), now);
        assert_eq!(p.range().since, d("2026-04-03"));
    }

    fn live(c: &SyncCursor, now: i64) -> (i64, bool, bool, bool) {
        match plan_sync(c, now) {
            SyncPlan::Live {
                range,
                full_catalog,
                daily,
                weekly,
            } => (range.days(), full_catalog, daily, weekly),
            other => panic!("expected live, got {other:?}"),
        }
    }

    #[test]
    fn live_runs_read_two_days_until_the_4am_slot() {
        let mut c = cursor("Asia/Kolkata");
        // 03:59 local on June 30th (+05:30).
        let before = ms("2026-06-29T22:29:00Z");
        c.last_sync_at = Some(before - SYNC_INTERVAL_MS);
        c.last_daily_resync_at = Some(before - DAY_MS);
        c.last_full_resync_at = Some(before - DAY_MS);
        assert_eq!(live(&c, before), (2, false, false, false));
        // 04:00 local: the daily run reads 7 days and the catalog.
        let slot = ms("2026-06-29T22:30:00Z");
        assert_eq!(live(&c, slot), (7, true, true, false));
        // Once done for the day, back to two days.
        c.last_daily_resync_at = Some(slot);
        assert_eq!(live(&c, slot + SYNC_INTERVAL_MS), (2, false, false, false));
    }

    #[test]
    fn the_weekly_run_reads_28_days_after_seven_days_less_twelve_hours() {
        let mut c = cursor("Asia/Kathmandu");
        let slot = ms("2026-06-29T22:15:00Z"); // 04:00 at +05:45
        c.last_sync_at = Some(slot - SYNC_INTERVAL_MS);
        c.last_daily_resync_at = Some(slot - DAY_MS);
        c.last_full_resync_at = Some(slot - WEEK_MS + DAY_MS / 2 + 1);
        assert_eq!(live(&c, slot), (7, true, true, false));
        c.last_full_resync_at = Some(slot - WEEK_MS + DAY_MS / 2);
        assert_eq!(live(&c, slot), (28, true, true, true));
    }

    #[test]
    fn the_daily_slot_moves_with_dst() {
        // New York on the day DST starts (2026-03-08): 04:00 EDT is 08:00Z,
        // because local midnight was still EST (05:00Z) and the slot is
        // midnight + 4 hours of elapsed time.
        let mut c = cursor("America/New_York");
        c.last_sync_at = Some(ms("2026-03-08T08:00:00Z"));
        c.last_daily_resync_at = Some(ms("2026-03-07T09:00:00Z"));
        c.last_full_resync_at = Some(ms("2026-03-07T09:00:00Z"));
        assert!(!live(&c, ms("2026-03-08T08:59:00Z")).2);
        assert!(live(&c, ms("2026-03-08T09:00:00Z")).2);
    }

    #[test]
    fn a_pause_of_more_than_27_days_backfills_the_gap_first() {
        let mut c = cursor("UTC");
        let now = ms("2026-06-30T12:00:00Z");
        c.last_sync_at = Some(now - 27 * DAY_MS);
        c.last_daily_resync_at = c.last_sync_at;
        c.last_full_resync_at = c.last_sync_at;
        assert!(matches!(plan_sync(&c, now), SyncPlan::Live { .. }));
        c.last_sync_at = Some(now - 27 * DAY_MS - 1);
        match plan_sync(&c, now) {
            SyncPlan::Backfill {
                range, next_from, ..
            } => {
                assert_eq!(range.since, d("2026-06-02"));
                assert_eq!(range.until, d("2026-06-30"));
                assert_eq!(next_from, None);
            }
            other => panic!("{other:?}"),
        }
        // A pause longer than the backfill window starts 89 days back.
        c.last_sync_at = Some(now - 200 * DAY_MS);
        assert_eq!(plan_sync(&c, now).range().since, d("2026-04-02"));
    }

    #[test]
    fn a_failed_first_run_still_owes_the_backfill() {
        let c = cursor("UTC");
        assert!(matches!(
            plan_sync(&c, ms("2026-06-30T00:00:00Z")),
            SyncPlan::Backfill { .. }
        ));
    }

    #[test]
    fn ranges_halve_down_to_single_days() {
        let r = DateRange {
            since: d("2026-06-01"),
            until: d("2026-06-30"),
        };
        let (a, b) = r.halves().unwrap();
        assert_eq!((a.days(), b.days()), (15, 15));
        let r = DateRange {
            since: d("2026-06-01"),
            until: d("2026-06-03"),
        };
        let (a, b) = r.halves().unwrap();
        assert_eq!((a.days(), b.days()), (1, 2));
        assert!(
            DateRange {
                since: r.since,
                until: r.since
            }
            .halves()
            .is_none()
        );
    }

    #[test]
    fn retries_wait_15_minutes_doubling_to_6_hours() {
        let want = [
            (0, 15),
            (1, 15),
            (2, 30),
            (3, 60),
            (4, 120),
            (5, 240),
            (6, 360),
            (7, 360),
            (60, 360),
        ];
        for (failures, minutes) in want {
            assert_eq!(retry_delay(failures), minutes * MINUTE_MS, "{failures}");
        }
    }

    #[test]
    fn backfill_progress_counts_blocks_from_the_link_date() {
        let tz = Timezone::parse("UTC").unwrap();
        let linked = ms("2026-06-30T12:00:00Z");
        assert_eq!(backfill_progress(None, None, linked, tz), Some((0, 3)));
        assert_eq!(
            backfill_progress(None, Some(d("2026-05-02")), linked, tz),
            Some((1, 3))
        );
        assert_eq!(
            backfill_progress(None, Some(d("2026-06-01")), linked, tz),
            Some((2, 3))
        );
        assert_eq!(backfill_progress(Some(linked), None, linked, tz), None);
    }
}
