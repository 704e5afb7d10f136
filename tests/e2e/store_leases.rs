//! Leases against moto: taken once while due, again only after they run
//! out, and an ending recorded only by the run that holds the link and
//! saw every sync asked for.

use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::outcome::{Change, LinkUpdate, SyncState};
use adtrail_domain::plan::SyncInterval;
use adtrail_store::Store;
use adtrail_tests::*;

use crate::store::{LEASE_MS, linked};

/// Whether `run` takes the test link at `at`.
async fn lease(store: &Store, run: &str, at: i64) -> bool {
    store
        .links()
        .lease_link("s1", "act_1", run, at, SyncInterval::DEFAULT)
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
    store
        .links()
        .finish_run("s1", "act_1", run, update, leased, requested_seen)
        .await
        .unwrap()
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
        next_sync_at: T0,
        sync_state: SyncState::Live,
        failures: 0,
        last_error: None,
        backfill_from: Change::Clear,
        last_sync_at: Some(T0),
        last_daily_resync_at: None,
        last_full_resync_at: None,
        quiet_lease_ms: None,
        catalog_digest: Some("d1".into()),
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
