//! Tests of [`super`]: table-driven, one row per rule.

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
    c.last_sync_at = Some(before - SyncInterval::DEFAULT.ms());
    c.last_daily_resync_at = Some(before - DAY_MS);
    c.last_full_resync_at = Some(before - DAY_MS);
    assert_eq!(live(&c, before), (2, false, false, false));
    // 04:00 local: the daily run reads 7 days and the catalog.
    let slot = ms("2026-06-29T22:30:00Z");
    assert_eq!(live(&c, slot), (7, true, true, false));
    // Once done for the day, back to two days.
    c.last_daily_resync_at = Some(slot);
    assert_eq!(
        live(&c, slot + SyncInterval::DEFAULT.ms()),
        (2, false, false, false)
    );
}

#[test]
fn the_weekly_run_reads_28_days_after_seven_days_less_twelve_hours() {
    let mut c = cursor("Asia/Kathmandu");
    let slot = ms("2026-06-29T22:15:00Z"); // 04:00 at +05:45
    c.last_sync_at = Some(slot - SyncInterval::DEFAULT.ms());
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
    assert_eq!(backfill_progress(None, None, linked, &tz), Some((0, 3)));
    assert_eq!(
        backfill_progress(None, Some(d("2026-05-02")), linked, &tz),
        Some((1, 3))
    );
    assert_eq!(
        backfill_progress(None, Some(d("2026-06-01")), linked, &tz),
        Some((2, 3))
    );
    assert_eq!(backfill_progress(Some(linked), None, linked, &tz), None);
}
