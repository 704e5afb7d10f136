//! The DynamoDB store against moto: conditional writes, sums in step,
//! purges, claims (leases in `store_leases.rs`).

use adtrail_domain::plan::SyncInterval;
use adtrail_domain::spend::{RowChange, SpendFigures, SpendRow};
use adtrail_store::connections::ListedAccount;
use adtrail_store::lease::{Found, LeaseCondition};
use adtrail_store::purge::PurgeStep;
use adtrail_store::spend::SpendWrite;
use adtrail_tests::*;

/// The seed's lease, the default interval's.
pub(crate) const LEASE_MS: i64 = SyncInterval::DEFAULT.ms();

pub(crate) fn account(id: &str) -> ListedAccount {
    ListedAccount {
        ad_account_id: id.into(),
        name: "A".into(),
        currency: "USD".into(),
        timezone: "UTC".into(),
    }
}

pub(crate) fn row(day: i64, ad: &str, cents: i64) -> SpendRow {
    SpendRow {
        day_start: day * 86_400_000,
        ad_id: ad.into(),
        figures: SpendFigures {
            spend_cents: cents,
            impressions: cents * 10,
            clicks: 1,
        },
        updated_at: T0,
    }
}

pub(crate) async fn linked(h: &Harness) -> String {
    let store = h.store();
    store
        .sites()
        .put_site("s1", "S", "USD", None, T0)
        .await
        .unwrap();
    store
        .connections()
        .put_connection("o1", vec![0], "v1", &[account("act_1")], &[], T0)
        .await
        .unwrap();
    store
        .links()
        .link_account("s1", "o1", &account("act_1"), T0)
        .await
        .unwrap();
    assert!(
        store
            .links()
            .lease_link(
                "s1",
                "act_1",
                "run-1",
                T0,
                SyncInterval::DEFAULT,
                Found::Due
            )
            .await
            .unwrap()
    );
    "run-1".into()
}

#[tokio::test]
async fn spend_writes_keep_the_sums_in_step_and_stop_without_the_lease() {
    let h = Harness::start().await;
    let store = h.store();
    let run = linked(&h).await;
    let held = LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_1".into(),
        run_id: run,
    };
    // 150 rows over 3 days: more than one transaction.
    let puts: Vec<RowChange> = (0..150)
        .map(|i| RowChange::Put {
            row: row(20_000 + i % 3, &format!("{i}"), 100 + i),
            old: None,
        })
        .collect();
    assert_eq!(
        store.spend().write_spend(&held, &puts).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    // Change one, delete one.
    let changed = vec![
        RowChange::Put {
            row: row(20_000, "0", 5),
            old: Some(row(20_000, "0", 100).figures),
        },
        RowChange::Delete {
            row: row(20_001, "1", 101),
        },
    ];
    assert_eq!(
        store.spend().write_spend(&held, &changed).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let rows = h.all_rows("s1", "act_1").await;
    assert_eq!(rows.len(), 149);
    // The same change again, computed from what is no longer stored (as a
    // second execution of the run would): refused whole, sums untouched.
    assert_eq!(
        store.spend().write_spend(&held, &changed).await.unwrap(),
        SpendWrite::Stale
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    // Another run takes the lease: the old one writes nothing.
    assert!(
        store
            .links()
            .lease_link(
                "s1",
                "act_1",
                "run-2",
                T0 + LEASE_MS + 60_000,
                SyncInterval::DEFAULT,
                Found::Due,
            )
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .spend()
            .write_spend(
                &held,
                &[RowChange::Put {
                    row: row(20_005, "9", 1),
                    old: None
                }]
            )
            .await
            .unwrap(),
        SpendWrite::LostLease
    );
    let after = h.all_rows("s1", "act_1").await;
    assert_eq!(after.len(), 149);
    h.assert_sums_match_rows("s1", "act_1").await;
}

#[tokio::test]
async fn a_purge_runs_in_steps_and_stops_on_a_relink() {
    let started = Harness::start().await;
    let h = &started;
    let store = h.store();
    let run = linked(h).await;
    let held = LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_1".into(),
        run_id: run,
    };
    let puts: Vec<RowChange> = (0..120)
        .map(|i| RowChange::Put {
            row: row(20_000 + i % 4, &format!("{i}"), 7),
            old: None,
        })
        .collect();
    store.spend().write_spend(&held, &puts).await.unwrap();
    assert!(
        store
            .links()
            .unlink_account("s1", "act_1", T0)
            .await
            .unwrap()
    );
    assert!(
        !store
            .links()
            .unlink_account("s1", "act_1", T0)
            .await
            .unwrap(),
        "unlinking twice finds nothing"
    );
    assert_eq!(
        store.spend().pending_purges(10).await.unwrap(),
        vec![("s1".to_owned(), "act_1".to_owned())]
    );
    two_sweepers_take_each_step_once(h).await;
    a_relink_stops_a_pending_purge(h, &puts).await;
}

/// Two sweepers take the same step at once: each row goes once, and the
/// sums drop by it once.
async fn two_sweepers_take_each_step_once(h: &Harness) {
    let store = h.store();
    let spend = store.spend();
    let (a, b) = tokio::join!(
        spend.purge_step("s1", "act_1", 50),
        spend.purge_step("s1", "act_1", 50),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(matches!(
        (a, b),
        (PurgeStep::More { .. }, PurgeStep::More { .. })
    ));
    assert_eq!(a.rows() + b.rows(), 50, "each row deleted once");
    h.assert_sums_match_rows("s1", "act_1").await;
    assert_eq!(h.all_rows("s1", "act_1").await.len(), 70);
    assert_eq!(
        store.spend().purge_step("s1", "act_1", 100).await.unwrap(),
        PurgeStep::More { rows: 70 }
    );
    assert_eq!(
        store.spend().purge_step("s1", "act_1", 100).await.unwrap(),
        PurgeStep::Done
    );
    assert!(
        store
            .spend()
            .day_sums("s1", "act_1", 0, i64::MAX / 2)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.spend().pending_purges(10).await.unwrap().is_empty());
}

/// A relink while a purge is pending stops it.
async fn a_relink_stops_a_pending_purge(h: &Harness, puts: &[RowChange]) {
    let store = h.store();
    store
        .links()
        .link_account("s1", "o1", &account("act_1"), T0)
        .await
        .unwrap();
    assert!(
        store
            .links()
            .lease_link(
                "s1",
                "act_1",
                "run-3",
                T0,
                SyncInterval::DEFAULT,
                Found::Due
            )
            .await
            .unwrap()
    );
    let held = LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_1".into(),
        run_id: "run-3".into(),
    };
    store.spend().write_spend(&held, &puts[..10]).await.unwrap();
    store
        .links()
        .unlink_account("s1", "act_1", T0)
        .await
        .unwrap();
    store
        .links()
        .link_account("s1", "o1", &account("act_1"), T0)
        .await
        .unwrap();
    assert!(
        store.spend().pending_purges(10).await.unwrap().is_empty(),
        "the relink removed the purge"
    );
    store.spend().mark_purge("s1", "act_1", T0).await.unwrap();
    assert_eq!(
        store.spend().purge_step("s1", "act_1", 100).await.unwrap(),
        PurgeStep::Relinked
    );
    let rows = h.all_rows("s1", "act_1").await;
    assert_eq!(rows.len(), 10, "nothing purged under a live link");
}

#[tokio::test]
async fn claims_are_read_in_batches_and_one_account_feeds_one_site() {
    let h = Harness::start().await;
    let store = h.store();
    store
        .sites()
        .put_site("s1", "S", "USD", None, T0)
        .await
        .unwrap();
    store
        .sites()
        .put_site("s2", "S", "USD", None, T0)
        .await
        .unwrap();
    let listing: Vec<ListedAccount> = (0..15).map(|i| account(&format!("act_{i}"))).collect();
    store
        .connections()
        .put_connection("o1", vec![0], "v1", &listing, &[], T0)
        .await
        .unwrap();
    for a in &listing[..12] {
        store.links().link_account("s1", "o1", a, T0).await.unwrap();
    }
    assert!(matches!(
        store
            .links()
            .link_account("s2", "o1", &listing[0], T0)
            .await,
        Err(adtrail_store::linking::LinkError::Claimed)
    ));
    let ids: Vec<String> = (0..150).map(|i| format!("act_{i}")).collect();
    let claims = store.links().account_claims(&ids).await.unwrap();
    assert_eq!(claims.len(), 12);
    assert!(claims.values().all(|s| s == "s1"));
    assert_eq!(store.links().owner_links("o1").await.unwrap().len(), 12);
}

/// An agency whose 1,000 accounts and 1,000 pixels have long names: the
/// connection item stays under DynamoDB's 400 KB (moto refuses larger), and
/// every account is listed.
#[tokio::test]
async fn a_connection_listing_of_a_huge_agency_fits_its_item() {
    use adtrail_store::connections::{ListedAccount, ListedPixel};
    let h = Harness::start().await;
    let long = "\u{1F4B0}".repeat(400);
    let accounts: Vec<ListedAccount> = (0..1_000)
        .map(|i| ListedAccount {
            ad_account_id: format!("act_{i:012}"),
            name: long.clone(),
            currency: "BRL".into(),
            timezone: "America/Sao_Paulo".into(),
        })
        .collect();
    let pixels: Vec<ListedPixel> = (0..1_000)
        .map(|i| ListedPixel {
            pixel_id: format!("{i:015}"),
            name: long.clone(),
        })
        .collect();
    let stored = h
        .store()
        .connections()
        .put_connection("big", vec![7; 600], "v1", &accounts, &pixels, T0)
        .await
        .expect("stored");
    assert_eq!(stored.accounts.len(), 1_000);
    assert_eq!(stored.pixels.len(), 1_000);
}
