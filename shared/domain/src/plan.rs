//! What one sync run of an ad account reads from Meta, by the account's state
//! and the time in its own timezone (the seed's `planSync`).
//!
//! - after linking, a 90-day backfill, one 30-day block per run, resumable;
//!   the last block reads the full catalog and counts as the daily and weekly
//!   resync;
//! - then today and yesterday every 45 minutes ([`SyncInterval`]);
//! - the trailing 7 days and the full catalog on the first run after local
//!   day start + 4 hours;
//! - the trailing 28 days on that daily run once 7 days less 12 hours have
//!   passed since the last one (Meta settles spend within 28 days);
//! - back after a pause of more than 27 days, the gap is backfilled first.

use crate::dates::{LocalDate, Timezone, day_count, shift};
use crate::time::{DAY_MS, HOUR_MS, MINUTE_MS};

/// How often a live account's today and yesterday are read: the seed's 45
/// minutes unless the operator sets another (`SyncIntervalMinutes`, from
/// 15 minutes to a day). A longer interval costs less (each run is an SQS
/// message, a Lambda share, a lease and an ending in DynamoDB, and Meta
/// calls against the app's rate limits) and shows today's spend later.
///
/// It is also the lease: a run holds its account this long, and the lease
/// moves the account's next sync this far on, to the next live sync
/// itself. A live run that succeeds (nearly every run) keeps that time, so
/// its ending writes the account without moving it in the due index,
/// which would cost two more index writes a run. The price: a run that
/// dies without ending (its message lost, its process killed) is taken
/// over at the next live sync rather than sooner; a run that runs out of
/// time ends itself before its deadline and is not such a run. The
/// shortest interval is above the worker's 10-minute timeout, so a lease
/// always outlasts its run. An account on the quiet cadence is leased for
/// the quiet interval instead (its link's `leaseMs`), for the same reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncInterval(i64);

/// An interval outside [`SyncInterval::MIN_MINUTES`]..=[`SyncInterval::MAX_MINUTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the sync interval must be a whole number of minutes from {min} to {max}, not {given:?}", min = SyncInterval::MIN_MINUTES, max = SyncInterval::MAX_MINUTES)]
pub struct BadSyncInterval {
    pub given: String,
}

impl SyncInterval {
    /// The seed's cadence.
    pub const DEFAULT: Self = Self(45 * MINUTE_MS);
    /// The quiet cadence's default (`QuietSyncIntervalMinutes`): an account
    /// whose live read found nothing delivered today or yesterday is read
    /// again three hours on, not every interval (see
    /// [`crate::outcome::LinkProgress::quiet_interval`]).
    pub const QUIET_DEFAULT: Self = Self(180 * MINUTE_MS);
    pub const MIN_MINUTES: i64 = 15;
    pub const MAX_MINUTES: i64 = 24 * 60;

    /// Whole minutes, within the bounds.
    ///
    /// # Errors
    /// [`BadSyncInterval`] for anything else.
    pub fn from_minutes(text: &str) -> Result<Self, BadSyncInterval> {
        text.trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (Self::MIN_MINUTES..=Self::MAX_MINUTES).contains(m))
            .map(|m| Self(m * MINUTE_MS))
            .ok_or_else(|| BadSyncInterval {
                given: text.chars().take(32).collect(),
            })
    }

    /// From one live sync to the next, in milliseconds.
    pub const fn ms(self) -> i64 {
        self.0
    }

    /// How long a run holds its account: the interval (see above).
    pub const fn lease_ms(self) -> i64 {
        self.0
    }
}

impl Default for SyncInterval {
    fn default() -> Self {
        Self::DEFAULT
    }
}

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
    let tz = &cursor.timezone;
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
    tz: &Timezone,
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
mod tests;
