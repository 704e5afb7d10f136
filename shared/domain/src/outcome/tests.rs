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

mod schedule;
