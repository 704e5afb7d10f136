//! When a live run's ending puts the next sync: the lease's own time, the
//! quiet interval, or a time of its own; and whether the account keeps a
//! slot of its cadence.

use super::*;

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
