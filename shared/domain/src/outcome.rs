//! How a sync run ended, and what that makes of the account: its next sync
//! time, state, failure count and `lastError` (the seed's `finishSync`).
//! Pure, so every branch of the back-off is a table row in the tests.

use crate::dates::LocalDate;
use crate::error_codes::{LastErrorCode, last_error};
use crate::links::{Cadence, SlotPlace};
use crate::plan::{
    BACKFILL_NEXT_BLOCK_MS, PERMISSION_RETRY_MS, SyncInterval, THROTTLE_BACKOFF_MS,
    USAGE_BACKOFF_PCT, retry_delay,
};

/// Where an account stands, as `meta.status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncState {
    Backfill,
    Live,
    Error,
}

impl SyncState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backfill => "backfill",
            Self::Live => "live",
            Self::Error => "error",
        }
    }
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "backfill" => Some(Self::Backfill),
            "live" => Some(Self::Live),
            "error" => Some(Self::Error),
            _ => None,
        }
    }
}

/// What kind of plan a successful run carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanDone {
    Backfill {
        next_from: Option<LocalDate>,
    },
    Live {
        daily: bool,
        weekly: bool,
        /// Meta listed some ad's figures for today or yesterday: the
        /// account is delivering. An account that is not (its campaigns
        /// paused or ended, as most of an agency's long tail are) is read
        /// again at the quiet interval.
        delivered: bool,
    },
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Meta refused the token.
    Token,
    Throttled,
    Permission,
    /// KMS refused or was unreachable: only delays.
    SealingKey,
    /// Meta failed, timed out or answered something unreadable.
    Unavailable,
    /// The run stopped starting Meta reads before its Lambda deadline; what
    /// it read is saved, the rest is read on the next run.
    OutOfTime,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunOutcome {
    Ok {
        usage_pct: u32,
        regain_ms: Option<i64>,
        plan: PlanDone,
        /// Some day had more rows than one call reads.
        truncated: bool,
        /// The digest of what the run learnt of the catalog, all of it
        /// saved.
        catalog_digest: Option<String>,
    },
    Failed {
        kind: FailureKind,
        /// A short reason, free of secrets.
        reason: String,
        regain_ms: Option<i64>,
    },
    /// A backfill run that stopped (`stopped`, a failure) after saving the
    /// block's days up to the one before `next_from`: the next run starts
    /// there. Stopping for its deadline after reading something is no
    /// failure: the run read a shorter block.
    Partial {
        next_from: LocalDate,
        stopped: Box<RunOutcome>,
    },
}

impl RunOutcome {
    /// How the run ended, in a word for metrics and logs: `succeeded`,
    /// `partial` (a backfill that saved part of its block and goes on next
    /// time) or `failed`.
    pub fn class(&self) -> &'static str {
        match self {
            RunOutcome::Ok { .. } => "succeeded",
            RunOutcome::Partial { .. } => "partial",
            RunOutcome::Failed { .. } => "failed",
        }
    }

    /// Whether Meta refused the run's token: the only ending that depends
    /// on whether the token is still the connection's.
    pub fn token_refused(&self) -> bool {
        match self {
            RunOutcome::Failed {
                kind: FailureKind::Token,
                ..
            } => true,
            RunOutcome::Partial { stopped, .. } => stopped.token_refused(),
            _ => false,
        }
    }
}

/// The part of a link the outcome depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkProgress {
    pub sync_state: SyncState,
    pub failures: u32,
    pub sync_requested: bool,
    /// Whether the token the run used is still the connection's token.
    pub token_still_stored: bool,
    /// The next sync time the run's lease set: a live run that needs no
    /// other time keeps it.
    pub leased_next: Option<i64>,
    /// The lease's length, when not `interval` (the link's `leaseMs`).
    pub lease_ms: Option<i64>,
    /// The operator's cadence, for a live run whose lease time has passed.
    pub interval: SyncInterval,
    /// The operator's quiet cadence (`QuietSyncIntervalMinutes`), never
    /// shorter than `interval`: after a live run that found nothing
    /// delivered, the next one comes this long after the lease instead.
    /// Each run of an idle account costs as much as any other (a message,
    /// a lease and an ending in DynamoDB, Meta calls), for a read that
    /// changes nothing; a campaign started meanwhile shows its spend up to
    /// this much later, or at once on `POST …/sync`.
    pub quiet_interval: SyncInterval,
}

/// A field the update sets, clears or leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<T> {
    Keep,
    Set(T),
    Clear,
}

/// What to write on the link when the run ends (the run's lease is always
/// released with it).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkUpdate {
    pub next_sync_at: i64,
    pub sync_state: SyncState,
    pub failures: u32,
    pub last_error: Option<String>,
    pub backfill_from: Change<LocalDate>,
    pub last_sync_at: Option<i64>,
    pub last_daily_resync_at: Option<i64>,
    pub last_full_resync_at: Option<i64>,
    /// The length of the account's next lease when it is not the sync
    /// interval: the quiet interval, so that the next quiet run's lease
    /// already moves the account as far as its ending would (its ending
    /// then leaves it in place in the due index, two index writes fewer).
    /// `None` clears it.
    pub quiet_lease_ms: Option<i64>,
    /// What the account's runs learnt of the catalog, as of this ending
    /// (`None` clears it: a run that did not end well may have saved part
    /// of something else).
    pub catalog_digest: Option<String>,
    /// The cadence slot the account keeps from here, when its next sync is
    /// the lease's own (the run kept its cadence): the dispatcher then
    /// finds it at the same point of every cycle and its entry in the index
    /// never moves. `None`: the next sync is a time of its own.
    pub slot: Option<SlotPlace>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Finish {
    Update(LinkUpdate),
    /// The token the run used is dead and still stored: stop every account
    /// of the connection until a new token comes.
    PauseConnection {
        last_error: String,
    },
}

/// What a run's end makes of its account.
pub fn finish(link: LinkProgress, outcome: &RunOutcome, started_at: i64, now: i64) -> Finish {
    match outcome {
        RunOutcome::Partial { next_from, stopped } => {
            finish_partial(link, *next_from, stopped, started_at, now)
        }
        RunOutcome::Ok {
            usage_pct,
            regain_ms,
            plan,
            truncated,
            catalog_digest,
        } => match finish_ok(
            link, *usage_pct, *regain_ms, plan, *truncated, started_at, now,
        ) {
            Finish::Update(u) => Finish::Update(LinkUpdate {
                catalog_digest: catalog_digest.clone(),
                ..u
            }),
            pause => pause,
        },
        RunOutcome::Failed {
            kind: FailureKind::Token,
            reason,
            ..
        } => {
            if link.token_still_stored {
                Finish::PauseConnection {
                    last_error: last_error(LastErrorCode::MetaTokenInvalid, reason),
                }
            } else {
                // A new token came while this run used the old one: it gets
                // its chance at once.
                Finish::Update(keep(now, link.sync_state, link.failures, None))
            }
        }
        RunOutcome::Failed {
            kind,
            reason,
            regain_ms,
        } => finish_failed(link, *kind, reason, *regain_ms, now),
    }
}

/// An update that moves the schedule, the state, the failures and the
/// error, and keeps the rest of the link as it is.
fn keep(
    next_sync_at: i64,
    sync_state: SyncState,
    failures: u32,
    last_error: Option<String>,
) -> LinkUpdate {
    LinkUpdate {
        next_sync_at,
        sync_state,
        failures,
        last_error,
        backfill_from: Change::Keep,
        last_sync_at: None,
        last_daily_resync_at: None,
        last_full_resync_at: None,
        quiet_lease_ms: None,
        catalog_digest: None,
        slot: None,
    }
}

/// A run that read what it planned: the next block of a backfill, or the
/// next live sync (sooner when asked for, later when Meta is busy).
fn finish_ok(
    link: LinkProgress,
    usage_pct: u32,
    regain_ms: Option<i64>,
    plan: &PlanDone,
    truncated: bool,
    started_at: i64,
    now: i64,
) -> Finish {
    let busy = usage_pct > USAGE_BACKOFF_PCT;
    let wait = if busy {
        regain_ms.unwrap_or(0).max(THROTTLE_BACKOFF_MS)
    } else {
        0
    };
    let error = if truncated {
        Some(last_error(
            LastErrorCode::MetaTruncated,
            "Meta listed more rows than one call reads for a day; that day may be short",
        ))
    } else if busy {
        Some(last_error(LastErrorCode::RateLimited, "backing off"))
    } else {
        None
    };
    if let PlanDone::Backfill {
        next_from: Some(next),
    } = plan
    {
        return Finish::Update(LinkUpdate {
            backfill_from: Change::Set(*next),
            ..keep(
                now + wait.max(BACKFILL_NEXT_BLOCK_MS),
                SyncState::Backfill,
                0,
                error,
            )
        });
    }
    // Every interval from one lease to the next; the quiet interval when
    // nothing was delivered.
    let quiet = matches!(
        plan,
        PlanDone::Live {
            delivered: false,
            ..
        }
    ) && link.quiet_interval.ms() > link.interval.ms();
    let cadence = if quiet {
        link.quiet_interval.ms()
    } else {
        link.interval.ms()
    };
    let next = if link.sync_requested {
        now
    } else if wait > 0 {
        now + wait
    } else {
        let lease = link.lease_ms.unwrap_or(link.interval.ms());
        link.leased_next
            .map(|at| at - lease + cadence)
            .filter(|at| *at > now)
            .unwrap_or(now + cadence)
    };
    // The lease's own next sync: the account keeps its cadence, and a slot
    // of it.
    let slot =
        (!link.sync_requested && wait == 0 && link.leased_next == Some(next)).then(|| SlotPlace {
            cadence: if quiet {
                Cadence::Quiet
            } else {
                Cadence::Interval
            },
            slot: next.rem_euclid(cadence),
        });
    let (daily, weekly) = match plan {
        PlanDone::Live { daily, weekly, .. } => (*daily, *weekly),
        PlanDone::Backfill { .. } => (true, true),
    };
    Finish::Update(LinkUpdate {
        backfill_from: Change::Clear,
        last_sync_at: Some(started_at),
        last_daily_resync_at: daily.then_some(started_at),
        last_full_resync_at: weekly.then_some(started_at),
        quiet_lease_ms: quiet.then_some(cadence),
        slot,
        ..keep(next, SyncState::Live, 0, error)
    })
}

/// A failed run (not a refused token): its back-off, state and code.
fn finish_failed(
    link: LinkProgress,
    kind: FailureKind,
    reason: &str,
    regain_ms: Option<i64>,
    now: i64,
) -> Finish {
    let failures = link.failures.saturating_add(1);
    let (delay, code, state) = match kind {
        FailureKind::Throttled => (
            regain_ms.unwrap_or(0).max(THROTTLE_BACKOFF_MS),
            LastErrorCode::RateLimited,
            link.sync_state,
        ),
        FailureKind::Permission => (
            PERMISSION_RETRY_MS,
            LastErrorCode::MetaPermissionMissing,
            SyncState::Error,
        ),
        FailureKind::SealingKey => (
            retry_delay(failures),
            LastErrorCode::SealingKeyUnavailable,
            link.sync_state,
        ),
        FailureKind::OutOfTime => (
            retry_delay(failures),
            LastErrorCode::RunTimeout,
            link.sync_state,
        ),
        FailureKind::Unavailable | FailureKind::Token => (
            retry_delay(failures),
            LastErrorCode::MetaUnavailable,
            link.sync_state,
        ),
    };
    let next = if link.sync_requested {
        now
    } else {
        now + delay
    };
    Finish::Update(keep(next, state, failures, Some(last_error(code, reason))))
}

/// A backfill that stopped part-way: the stop's own ending, with the
/// block's progress kept; out of time after reading something is no
/// failure, the next block comes soon.
fn finish_partial(
    link: LinkProgress,
    next_from: LocalDate,
    stopped: &RunOutcome,
    started_at: i64,
    now: i64,
) -> Finish {
    let out_of_time = matches!(
        stopped,
        RunOutcome::Failed {
            kind: FailureKind::OutOfTime,
            ..
        }
    );
    match finish(link, stopped, started_at, now) {
        Finish::Update(mut update) => {
            update.backfill_from = Change::Set(next_from);
            if out_of_time {
                update.failures = 0;
                update.last_error = None;
                update.next_sync_at = now + BACKFILL_NEXT_BLOCK_MS;
            }
            Finish::Update(update)
        }
        pause => pause,
    }
}

#[cfg(test)]
mod tests;
