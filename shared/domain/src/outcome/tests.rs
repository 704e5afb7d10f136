//! Tests of [`super`]: table-driven, one row per rule.

use super::*;
use crate::time::{HOUR_MS, MINUTE_MS};

const NOW: i64 = 1_800_000_000_000;
fn link() -> LinkProgress {
    LinkProgress {
        sync_state: SyncState::Live,
        failures: 0,
        sync_requested: false,
        token_still_stored: true,
        leased_next: None,
        lease_ms: None,
        interval: SyncInterval::DEFAULT,
        quiet_interval: SyncInterval::QUIET_DEFAULT,
    }
}
fn failed(kind: FailureKind, regain_ms: Option<i64>) -> RunOutcome {
    RunOutcome::Failed {
        kind,
        reason: "boom".into(),
        regain_ms,
    }
}
fn update(f: Finish) -> LinkUpdate {
    match f {
        Finish::Update(u) => u,
        other => panic!("{other:?}"),
    }
}
/// A live run's success that found something delivered (or not).
fn live_ok(delivered: bool, usage_pct: u32) -> RunOutcome {
    ok(
        PlanDone::Live {
            daily: false,
            weekly: false,
            delivered,
        },
        usage_pct,
        None,
    )
}
fn ok(plan: PlanDone, usage_pct: u32, regain_ms: Option<i64>) -> RunOutcome {
    RunOutcome::Ok {
        usage_pct,
        regain_ms,
        plan,
        truncated: false,
        catalog_digest: Some("learnt".into()),
    }
}

#[test]
fn back_off_by_outcome() {
    let live = PlanDone::Live {
        daily: false,
        weekly: false,
        delivered: true,
    };
    let rows: Vec<(RunOutcome, u32, i64, Option<&str>, SyncState)> = vec![
        (ok(live, 10, None), 0, 45 * MINUTE_MS, None, SyncState::Live),
        (
            ok(live, 76, None),
            0,
            HOUR_MS,
            Some("RATE_LIMITED"),
            SyncState::Live,
        ),
        (ok(live, 75, None), 0, 45 * MINUTE_MS, None, SyncState::Live),
        (
            ok(live, 90, Some(3 * HOUR_MS)),
            0,
            3 * HOUR_MS,
            Some("RATE_LIMITED"),
            SyncState::Live,
        ),
        (
            failed(FailureKind::Throttled, None),
            1,
            HOUR_MS,
            Some("RATE_LIMITED"),
            SyncState::Live,
        ),
        (
            failed(FailureKind::Throttled, Some(2 * HOUR_MS)),
            1,
            2 * HOUR_MS,
            Some("RATE_LIMITED"),
            SyncState::Live,
        ),
        (
            failed(FailureKind::Unavailable, None),
            1,
            15 * MINUTE_MS,
            Some("META_UNAVAILABLE"),
            SyncState::Live,
        ),
        (
            failed(FailureKind::Permission, None),
            1,
            6 * HOUR_MS,
            Some("META_PERMISSION_MISSING"),
            SyncState::Error,
        ),
        (
            failed(FailureKind::SealingKey, None),
            1,
            15 * MINUTE_MS,
            Some("SEALING_KEY_UNAVAILABLE"),
            SyncState::Live,
        ),
        (
            failed(FailureKind::OutOfTime, None),
            1,
            15 * MINUTE_MS,
            Some("RUN_TIMEOUT"),
            SyncState::Live,
        ),
    ];
    for (outcome, failures, wait, code, state) in rows {
        let u = update(finish(link(), &outcome, NOW - 1_000, NOW));
        assert_eq!(u.next_sync_at - NOW, wait, "{outcome:?}");
        assert_eq!(u.failures, failures, "{outcome:?}");
        assert_eq!(
            u.last_error
                .as_deref()
                .map(|e| e.split(':').next().unwrap()),
            code,
            "{outcome:?}"
        );
        assert_eq!(u.sync_state, state, "{outcome:?}");
    }
}

#[test]
fn a_live_run_keeps_the_time_its_lease_set_unless_it_needs_another() {
    let live = live_ok(true, 10);
    let leased = LinkProgress {
        leased_next: Some(NOW + 40 * MINUTE_MS),
        ..link()
    };
    let u = update(finish(leased, &live, NOW - 5 * MINUTE_MS, NOW));
    assert_eq!(
        u.next_sync_at,
        NOW + 40 * MINUTE_MS,
        "45 minutes lease to lease"
    );
    // Asked for, busy, failed or backfilling: the run's own time.
    let asked = LinkProgress {
        sync_requested: true,
        ..leased
    };
    assert_eq!(update(finish(asked, &live, NOW, NOW)).next_sync_at, NOW);
    let busy = live_ok(true, 90);
    assert_eq!(
        update(finish(leased, &busy, NOW, NOW)).next_sync_at,
        NOW + HOUR_MS
    );
    let failed_run = failed(FailureKind::Unavailable, None);
    assert_eq!(
        update(finish(leased, &failed_run, NOW, NOW)).next_sync_at,
        NOW + 15 * MINUTE_MS
    );
    // A lease already past (a clock behind another's): an interval from
    // now, the seed's 45 minutes or the operator's.
    let past = LinkProgress {
        leased_next: Some(NOW - 1),
        ..link()
    };
    assert_eq!(
        update(finish(past, &live, NOW, NOW)).next_sync_at,
        NOW + 45 * MINUTE_MS
    );
    let hourly = LinkProgress {
        interval: SyncInterval::from_minutes("60").unwrap(),
        ..past
    };
    assert_eq!(
        update(finish(hourly, &live, NOW, NOW)).next_sync_at,
        NOW + HOUR_MS
    );
}

#[test]
fn an_account_that_delivered_nothing_is_read_again_at_the_quiet_interval() {
    let quiet = |daily| {
        ok(
            PlanDone::Live {
                daily,
                weekly: false,
                delivered: false,
            },
            10,
            None,
        )
    };
    let leased = LinkProgress {
        leased_next: Some(NOW + 40 * MINUTE_MS),
        ..link()
    };
    // Three hours from the lease (which set 45 minutes), whatever the plan,
    // and the next lease three hours long.
    for daily in [false, true] {
        let u = update(finish(leased, &quiet(daily), NOW - 5 * MINUTE_MS, NOW));
        assert_eq!(u.next_sync_at, NOW + 40 * MINUTE_MS + 135 * MINUTE_MS);
        assert_eq!(u.quiet_lease_ms, Some(3 * HOUR_MS));
    }
    // That lease already set the time: the ending keeps it. A read that
    // finds delivery again goes back to 45 minutes from the lease, and
    // to leases of the interval.
    let quiet_lease = LinkProgress {
        leased_next: Some(NOW + 175 * MINUTE_MS),
        lease_ms: Some(3 * HOUR_MS),
        ..link()
    };
    assert_eq!(
        update(finish(quiet_lease, &quiet(false), NOW - 5 * MINUTE_MS, NOW)).next_sync_at,
        NOW + 175 * MINUTE_MS
    );
    let woke = live_ok(true, 10);
    let u = update(finish(quiet_lease, &woke, NOW - 5 * MINUTE_MS, NOW));
    assert_eq!(
        (u.next_sync_at, u.quiet_lease_ms),
        (NOW + 40 * MINUTE_MS, None)
    );
    // A lease already past: the quiet interval from now.
    let past = LinkProgress {
        leased_next: None,
        ..link()
    };
    assert_eq!(
        update(finish(past, &quiet(false), NOW, NOW)).next_sync_at,
        NOW + 3 * HOUR_MS
    );
    // Never sooner than the live interval, asked for at once, busy on Meta's
    // own time, and a backfill's last block is no quiet read.
    let slow = LinkProgress {
        interval: SyncInterval::from_minutes("360").unwrap(),
        ..past
    };
    assert_eq!(
        update(finish(slow, &quiet(false), NOW, NOW)).next_sync_at,
        NOW + 6 * HOUR_MS
    );
    let asked = LinkProgress {
        sync_requested: true,
        ..leased
    };
    assert_eq!(
        update(finish(asked, &quiet(false), NOW, NOW)).next_sync_at,
        NOW
    );
    let busy = live_ok(false, 90);
    assert_eq!(
        update(finish(leased, &busy, NOW, NOW)).next_sync_at,
        NOW + HOUR_MS
    );
    let last_block = ok(PlanDone::Backfill { next_from: None }, 10, None);
    assert_eq!(
        update(finish(leased, &last_block, NOW, NOW)).next_sync_at,
        NOW + 40 * MINUTE_MS
    );
}

#[test]
fn the_interval_is_whole_minutes_from_a_quarter_hour_to_a_day() {
    assert_eq!(SyncInterval::default().ms(), 45 * MINUTE_MS);
    assert_eq!(
        SyncInterval::from_minutes(" 15 ").unwrap().ms(),
        15 * MINUTE_MS
    );
    let day = SyncInterval::from_minutes("1440").unwrap();
    assert_eq!((day.ms(), day.lease_ms()), (24 * HOUR_MS, 24 * HOUR_MS));
    for bad in ["14", "1441", "0", "-45", "45.5", "", "forty-five"] {
        let err = SyncInterval::from_minutes(bad).unwrap_err();
        assert!(err.to_string().contains("from 15 to 1440"), "{err}");
    }
    // What is quoted back is bounded.
    let long = "9".repeat(1_000);
    assert!(
        SyncInterval::from_minutes(&long)
            .unwrap_err()
            .to_string()
            .len()
            < 120
    );
}

#[test]
fn failures_double_up_to_six_hours() {
    let mut l = link();
    let mut waits = vec![];
    for _ in 0..7 {
        let u = update(finish(l, &failed(FailureKind::Unavailable, None), NOW, NOW));
        waits.push((u.next_sync_at - NOW) / MINUTE_MS);
        l.failures = u.failures;
    }
    assert_eq!(waits, vec![15, 30, 60, 120, 240, 360, 360]);
}

#[test]
fn a_requested_sync_overrides_the_back_off() {
    let l = LinkProgress {
        sync_requested: true,
        ..link()
    };
    let u = update(finish(l, &failed(FailureKind::Throttled, None), NOW, NOW));
    assert_eq!(u.next_sync_at, NOW);
}

#[test]
fn a_backfill_block_moves_the_cursor_and_the_last_one_goes_live() {
    let next = crate::dates::parse_date("2026-05-02").unwrap();
    let u = update(finish(
        link(),
        &ok(
            PlanDone::Backfill {
                next_from: Some(next),
            },
            0,
            None,
        ),
        NOW - 5,
        NOW,
    ));
    assert_eq!(u.backfill_from, Change::Set(next));
    assert_eq!(u.next_sync_at, NOW + 1_000);
    assert_eq!(u.last_sync_at, None);
    let u = update(finish(
        link(),
        &ok(PlanDone::Backfill { next_from: None }, 0, None),
        NOW - 5,
        NOW,
    ));
    assert_eq!(u.backfill_from, Change::Clear);
    assert_eq!(u.sync_state, SyncState::Live);
    assert_eq!(
        (
            u.last_sync_at,
            u.last_daily_resync_at,
            u.last_full_resync_at
        ),
        (Some(NOW - 5), Some(NOW - 5), Some(NOW - 5))
    );
}

#[test]
fn a_dead_token_pauses_the_connection_unless_replaced() {
    assert!(matches!(
        finish(link(), &failed(FailureKind::Token, None), NOW, NOW),
        Finish::PauseConnection { .. }
    ));
    let replaced = LinkProgress {
        token_still_stored: false,
        ..link()
    };
    let u = update(finish(
        replaced,
        &failed(FailureKind::Token, None),
        NOW,
        NOW,
    ));
    assert_eq!(u.next_sync_at, NOW);
}

#[test]
fn a_truncated_day_is_reported() {
    let o = RunOutcome::Ok {
        usage_pct: 0,
        regain_ms: None,
        plan: PlanDone::Live {
            daily: false,
            weekly: false,
            delivered: true,
        },
        truncated: true,
        catalog_digest: None,
    };
    assert!(
        update(finish(link(), &o, NOW, NOW))
            .last_error
            .unwrap()
            .starts_with("META_TRUNCATED: ")
    );
}

#[test]
fn a_backfill_that_stopped_keeps_its_progress() {
    let from = crate::dates::parse_date("2026-05-09").unwrap();
    let backfilling = LinkProgress {
        sync_state: SyncState::Backfill,
        failures: 3,
        ..link()
    };
    let partial = |stopped| RunOutcome::Partial {
        next_from: from,
        stopped: Box::new(stopped),
    };
    // Out of time after reading something: no failure, next block soon.
    let u = update(finish(
        backfilling,
        &partial(failed(FailureKind::OutOfTime, None)),
        NOW,
        NOW,
    ));
    assert_eq!(u.backfill_from, Change::Set(from));
    assert_eq!((u.failures, u.last_error), (0, None));
    assert_eq!(u.next_sync_at, NOW + BACKFILL_NEXT_BLOCK_MS);
    // Meta failed mid-block: the failure's back-off, the progress kept.
    let u = update(finish(
        backfilling,
        &partial(failed(FailureKind::Throttled, Some(2 * HOUR_MS))),
        NOW,
        NOW,
    ));
    assert_eq!(u.backfill_from, Change::Set(from));
    assert_eq!(u.failures, 4);
    assert_eq!(u.next_sync_at, NOW + 2 * HOUR_MS);
    assert!(u.last_error.is_some_and(|e| e.starts_with("RATE_LIMITED")));
}

#[test]
fn only_a_run_that_ended_well_keeps_what_it_learnt_of_the_catalog() {
    let digest = |o: &RunOutcome| update(finish(link(), o, NOW, NOW)).catalog_digest;
    assert_eq!(digest(&live_ok(true, 0)).as_deref(), Some("learnt"));
    assert_eq!(digest(&failed(FailureKind::Throttled, None)), None);
    let partial = RunOutcome::Partial {
        next_from: crate::dates::parse_date("2026-05-09").unwrap(),
        stopped: Box::new(failed(FailureKind::OutOfTime, None)),
    };
    assert_eq!(digest(&partial), None);
}

/// Only an ending that keeps the time its lease set keeps a slot: of the
/// interval's cycle, or of the quiet one's when its lease was quiet too.
/// Anything else (a time of its own) leaves the slot.
#[test]
fn an_ending_that_keeps_its_leases_time_keeps_a_slot_of_its_cadence() {
    let at = NOW + 40 * MINUTE_MS;
    let leased = LinkProgress {
        leased_next: Some(at),
        ..link()
    };
    let slot_of = |progress, outcome: &RunOutcome| update(finish(progress, outcome, NOW, NOW)).slot;
    assert_eq!(
        slot_of(leased, &live_ok(true, 10)),
        Some(SlotPlace {
            cadence: Cadence::Interval,
            slot: at % (45 * MINUTE_MS),
        })
    );
    let quiet = LinkProgress {
        leased_next: Some(at),
        lease_ms: Some(3 * HOUR_MS),
        ..link()
    };
    assert_eq!(
        slot_of(quiet, &live_ok(false, 10)),
        Some(SlotPlace {
            cadence: Cadence::Quiet,
            slot: at % (3 * HOUR_MS),
        })
    );
    // Moving to the quiet cadence, or back from it: a new time.
    assert_eq!(slot_of(leased, &live_ok(false, 10)), None);
    assert_eq!(slot_of(quiet, &live_ok(true, 10)), None);
    // Asked for, busy, failed, a backfill's next block, a lease long past.
    let asked = LinkProgress {
        sync_requested: true,
        ..leased
    };
    assert_eq!(slot_of(asked, &live_ok(true, 10)), None);
    assert_eq!(slot_of(leased, &live_ok(true, 90)), None);
    assert_eq!(
        slot_of(leased, &failed(FailureKind::Unavailable, None)),
        None
    );
    let block = ok(
        PlanDone::Backfill {
            next_from: Some(crate::dates::parse_date("2026-01-01").unwrap()),
        },
        10,
        None,
    );
    assert_eq!(slot_of(leased, &block), None);
    let past = LinkProgress {
        leased_next: Some(NOW - MINUTE_MS),
        ..link()
    };
    assert_eq!(slot_of(past, &live_ok(true, 10)), None);
    // The last block of a backfill ends on the cadence.
    let last_block = ok(PlanDone::Backfill { next_from: None }, 10, None);
    assert!(slot_of(leased, &last_block).is_some());
}
