//! Leases against moto: taken once while due, again only after they run
//! out, and an ending recorded only by the run that holds the link and
//! saw every sync asked for.

use adtrail_domain::links::{Cadence, SiteAdAccount, SlotPlace};
use adtrail_domain::outcome::{Change, LinkUpdate, SyncState};
use adtrail_domain::plan::SyncInterval;
use adtrail_store::Store;
use adtrail_store::lease::{Found, Seen};
use adtrail_tests::*;

use crate::store::{LEASE_MS, linked};

/// Whether `run` takes the test link at `at`.
async fn lease(store: &Store, run: &str, at: i64) -> bool {
    store
        .links()
        .lease_link("s1", "act_1", run, at, SyncInterval::DEFAULT, Found::Due)
        .await
        .unwrap()
}

/// Whether `run`'s ending is recorded.
async fn end(
    store: &Store,
    run: &str,
    update: &LinkUpdate,
    leased: Option<i64>,
    requested_seen: bool,
) -> bool {
    let seen = Seen {
        next_sync_at: leased,
        sync_requested: requested_seen,
        slot: None,
    };
    store
        .links()
        .finish_run("s1", "act_1", run, update, &seen)
        .await
        .unwrap()
}

/// A live run's ending at [`T0`], next due at `next`, in `due`.
pub(crate) fn live_ending(next: i64) -> LinkUpdate {
    LinkUpdate {
        next_sync_at: next,
        sync_state: SyncState::Live,
        failures: 0,
        last_error: None,
        backfill_from: Change::Clear,
        last_sync_at: Some(T0),
        last_daily_resync_at: None,
        last_full_resync_at: None,
        quiet_lease_ms: None,
        catalog_digest: None,
        slot: None,
    }
}

async fn the_link(store: &Store) -> SiteAdAccount {
    store
        .links()
        .get_link("s1", "act_1")
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn a_lease_is_taken_once_while_due_and_again_only_after_it_runs_out() {
    let h = Harness::start().await;
    let store = h.store();
    linked(&h).await;
    assert!(!lease(store, "run-2", T0).await, "leased already");
    assert!(!lease(store, "run-2", T0 + LEASE_MS - 60_000).await);
    assert!(lease(store, "run-2", T0 + LEASE_MS).await);
    let link = the_link(store).await;
    assert_eq!(link.run_id.as_deref(), Some("run-2"));
    assert!(link.last_error.unwrap().starts_with("RUN_TIMEOUT"));
    // The old run's ending is not recorded.
    let update = LinkUpdate {
        catalog_digest: Some("d1".into()),
        ..live_ending(T0)
    };
    assert!(!end(store, "run-1", &update, None, false).await);
    // A sync asked for after the run read its link: an ending that did not
    // see it is refused (it would clear the request), one that did is not.
    store
        .links()
        .request_sync("s1", "act_1", T0 + LEASE_MS + 2)
        .await
        .unwrap();
    assert!(!end(store, "run-2", &update, None, false).await);
    let asked = the_link(store).await;
    assert!(asked.sync_requested && asked.run_id.as_deref() == Some("run-2"));
    // An ending that keeps the time the lease set leaves the link where
    // the lease put it; any other moves it. These saw the request, and
    // clear it.
    let leased = link.next_sync_at;
    assert_eq!(leased, Some(T0 + 2 * LEASE_MS));
    let kept = LinkUpdate {
        next_sync_at: T0 + 2 * LEASE_MS,
        ..update.clone()
    };
    assert!(end(store, "run-2", &kept, leased, true).await);
    let after = the_link(store).await;
    assert_eq!(after.next_sync_at, leased);
    assert_eq!(after.run_id, None, "the lease is released");
    assert!(!after.sync_requested);
    assert_eq!(after.catalog_digest.as_deref(), Some("d1"));
    assert!(lease(store, "run-3", T0 + 2 * LEASE_MS).await);
    assert_eq!(
        the_link(store).await.catalog_digest.as_deref(),
        Some("d1"),
        "a lease keeps what the last run learnt of the catalog"
    );
    assert!(end(store, "run-3", &update, leased, true).await);
    assert_eq!(the_link(store).await.next_sync_at, Some(T0));
    // A run that never ended may have saved part of something else.
    assert!(lease(store, "run-4", T0 + 3 * LEASE_MS).await);
    assert!(lease(store, "run-5", T0 + 4 * LEASE_MS).await);
    assert_eq!(the_link(store).await.catalog_digest, None);
}

/// The links at the slots of `range` of the interval's cycle.
async fn at_slots(store: &Store, lo: i64, hi: i64) -> Vec<String> {
    let range = adtrail_domain::slots::SlotRange { lo, hi: Some(hi) };
    let (found, _) = store
        .links()
        .slot_links(Cadence::Interval, range, 10, None)
        .await
        .unwrap();
    found.into_iter().map(|(_, account, _)| account).collect()
}

/// Whether the link is in `due` at `at`.
async fn in_due(store: &Store, at: i64) -> bool {
    let (due, _) = store.links().due_links(at, 10).await.unwrap();
    due.iter().any(|(_, account)| account == "act_1")
}

/// A link whose run keeps the cadence takes a slot and leaves `due`; at
/// its slot it is leased only once its time came, a lease later each time,
/// at the same slot; a sync asked for, a pause and a resume each take it
/// back to `due` (or out of both).
#[tokio::test]
async fn a_link_that_keeps_its_cadence_takes_a_slot_until_anything_else_moves_it() {
    let h = Harness::start().await;
    let store = h.store();
    linked(&h).await;
    let leased = the_link(store).await.next_sync_at.unwrap();
    let slot = leased.rem_euclid(LEASE_MS);
    let kept = LinkUpdate {
        slot: Some(SlotPlace {
            cadence: Cadence::Interval,
            slot,
        }),
        ..live_ending(leased)
    };
    assert!(end(store, "run-1", &kept, Some(leased), false).await);
    let placed = the_link(store).await;
    assert_eq!(
        (placed.slot, placed.next_sync_at),
        (kept.slot, Some(leased))
    );
    assert!(!in_due(store, leased).await);
    assert_eq!(at_slots(store, slot, slot).await, vec!["act_1"]);
    assert!(at_slots(store, slot + 1, LEASE_MS).await.is_empty());
    // Found at its slot: not before its time, nor as if found in `due`.
    let at_slot = |run: &'static str, at: i64| async move {
        store
            .links()
            .lease_link("s1", "act_1", run, at, SyncInterval::DEFAULT, Found::Slot)
            .await
            .unwrap()
    };
    assert!(!at_slot("run-2", leased - 1).await);
    assert!(!lease(store, "run-2", leased).await);
    assert!(at_slot("run-2", leased + 30_000).await);
    let running = the_link(store).await;
    assert_eq!(
        running.next_sync_at,
        Some(leased + LEASE_MS),
        "a lease after its slot time"
    );
    assert_eq!(at_slots(store, slot, slot).await, vec!["act_1"]);
    // A sync asked for while it runs waits for the run's ending, which
    // sends it to `due`, due now.
    store
        .links()
        .request_sync("s1", "act_1", leased + 60_000)
        .await
        .unwrap();
    let seen = Seen {
        next_sync_at: running.next_sync_at,
        sync_requested: true,
        slot: running.slot,
    };
    let asked = LinkUpdate {
        next_sync_at: leased + 90_000,
        slot: None,
        ..kept.clone()
    };
    assert!(
        store
            .links()
            .finish_run("s1", "act_1", "run-2", &asked, &seen)
            .await
            .unwrap()
    );
    let back = the_link(store).await;
    assert_eq!(
        (back.slot, back.next_sync_at),
        (None, Some(leased + 90_000))
    );
    assert!(in_due(store, leased + 90_000).await);
    assert!(at_slots(store, 0, LEASE_MS).await.is_empty());
    // Placed again, then a sync asked for while idle: `due`, due now.
    assert!(lease(store, "run-3", leased + 90_000).await);
    let next = leased + 90_000 + LEASE_MS;
    let again = LinkUpdate {
        next_sync_at: next,
        slot: Some(SlotPlace {
            cadence: Cadence::Interval,
            slot: next.rem_euclid(LEASE_MS),
        }),
        ..kept.clone()
    };
    assert!(end(store, "run-3", &again, Some(next), false).await);
    assert_eq!(
        the_link(store).await.slot.map(|p| p.cadence),
        Some(Cadence::Interval)
    );
    store
        .links()
        .request_sync("s1", "act_1", next - 5)
        .await
        .unwrap();
    let asked = the_link(store).await;
    assert_eq!((asked.slot, asked.next_sync_at), (None, Some(next - 5)));
    assert!(in_due(store, next - 5).await);
    assert!(lease(store, "run-4", next).await);
    assert!(
        end(
            store,
            "run-4",
            &again,
            the_link(store).await.next_sync_at,
            false
        )
        .await
    );
    let placed = the_link(store).await.slot.unwrap();
    assert_eq!(placed.cadence, Cadence::Interval);
    // Found at its slot, the run keeps its lease's time at another slot
    // (an operator's new interval): placed there, and only there.
    assert!(at_slot("run-5", next).await);
    let leased5 = the_link(store).await.next_sync_at;
    let moved = SlotPlace {
        cadence: Cadence::Interval,
        slot: placed.slot + 60_000,
    };
    let anew = LinkUpdate {
        next_sync_at: leased5.unwrap(),
        slot: Some(moved),
        ..kept.clone()
    };
    let seen = Seen {
        next_sync_at: leased5,
        sync_requested: false,
        slot: Some(placed),
    };
    assert!(
        store
            .links()
            .finish_run("s1", "act_1", "run-5", &anew, &seen)
            .await
            .unwrap()
    );
    assert_eq!(the_link(store).await.slot, Some(moved));
    assert_eq!(at_slots(store, moved.slot, moved.slot).await, vec!["act_1"]);
    assert!(at_slots(store, placed.slot, placed.slot).await.is_empty());
    // Paused: in neither index; resumed: `due`, due now.
    store
        .links()
        .pause_link("s1", "act_1", "META_TOKEN_INVALID: x")
        .await
        .unwrap();
    let paused = the_link(store).await;
    assert_eq!((paused.slot, paused.next_sync_at), (None, None));
    assert!(at_slots(store, 0, LEASE_MS).await.is_empty());
    assert!(!in_due(store, i64::MAX).await);
    store.links().resume_link(&paused, next + 1).await.unwrap();
    assert!(in_due(store, next + 1).await);
}
