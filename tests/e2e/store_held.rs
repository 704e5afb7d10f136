//! The sums of an account's two newest days, held on its link against
//! moto: a live write changes the link (its lease check) and the chunk,
//! and no sum item; a newer day moves the oldest held one to its sum item;
//! an unlink moves what the link holds; a run's ending goes in its last
//! write; the sums equal the rows throughout.

use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::outcome::LinkUpdate;
use adtrail_domain::plan::SyncInterval;
use adtrail_domain::spend::{RowChange, SpendFigures};
use adtrail_store::attr::s;
use adtrail_store::keys::{link_sk, site_pk, sum_pk};
use adtrail_store::lease::{Found, LeaseCondition, Seen};
use adtrail_store::spend::{EndWith, SpendWrite};
use adtrail_tests::*;

use crate::store::{account, linked, row};
use crate::store_leases::live_ending;

const DAY: i64 = 20_100;

async fn lease(h: &Harness) -> LeaseCondition {
    LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_1".into(),
        run_id: linked(h).await,
    }
}

/// The days of the account's sum items (their day starts), with their
/// spend.
async fn sum_items(h: &Harness) -> Vec<(i64, i64)> {
    let store = h.store();
    let out = store
        .ddb
        .query()
        .table_name(&store.names.table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", s(sum_pk("s1", "act_1")))
        .consistent_read(true)
        .send()
        .await
        .expect("query");
    out.items()
        .iter()
        .map(|i| {
            let day = i["sk"].as_s().unwrap().parse::<i64>().expect("a day start");
            let spend = i["spendCents"].as_n().unwrap().parse().unwrap();
            (day, spend)
        })
        .collect()
}

/// The spend the link holds, by its attribute names (`s@<dayStart>`).
async fn held_spend(h: &Harness) -> Vec<(String, String)> {
    let store = h.store();
    let link = store
        .ddb
        .get_item()
        .table_name(&store.names.table)
        .key("pk", s(site_pk("s1")))
        .key("sk", s(link_sk("act_1")))
        .consistent_read(true)
        .send()
        .await
        .expect("get")
        .item
        .expect("the link");
    let mut held: Vec<_> = link
        .iter()
        .filter(|(k, _)| k.starts_with("s@"))
        .map(|(k, v)| (k.clone(), v.as_n().unwrap().clone()))
        .collect();
    held.sort();
    held
}

fn put(day: i64, ad: &str, cents: i64, old: Option<i64>) -> RowChange {
    RowChange::Put {
        row: row(day, ad, cents),
        old: old.map(|c| row(day, ad, c).figures),
    }
}

fn day_ms(day: i64) -> i64 {
    day * 86_400_000
}

#[tokio::test]
async fn a_live_write_moves_the_link_and_its_chunk_and_no_sum_item() {
    let h = Harness::start().await;
    h.runner().stack.cloud.faults.set_share(0.0);
    let cond = lease(&h).await;
    let spend = h.store().spend();
    // A backfill block: three old days and yesterday and today.
    let block: Vec<_> = [DAY - 9, DAY - 8, DAY - 7, DAY - 1, DAY]
        .into_iter()
        .map(|d| put(d, "1", 100, None))
        .collect();
    assert_eq!(
        spend.write_spend(&cond, &block).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let old_days: Vec<_> = [DAY - 9, DAY - 8, DAY - 7].map(day_ms).into();
    assert_eq!(
        sum_items(&h)
            .await
            .iter()
            .map(|(d, _)| *d)
            .collect::<Vec<_>>(),
        old_days,
        "the old days in sum items"
    );
    assert_eq!(
        held_spend(&h).await,
        [
            (format!("s@{}", day_ms(DAY - 1)), "100".to_owned()),
            (format!("s@{}", day_ms(DAY)), "100".to_owned()),
        ],
        "the newest two on the link"
    );

    // A live run's rewrite of today: the link (as the lease's check, 2
    // units) and the chunk (2), nothing else.
    // (The worker's store: its requests are counted.)
    let worker = h.runner().stack.store_for("SyncWorkerFunction");
    worker.counter.reset();
    let live = [put(DAY, "1", 250, Some(100))];
    assert_eq!(
        worker.spend().write_spend(&cond, &live).await.unwrap(),
        SpendWrite::Written
    );
    let by = worker.counter.units_by();
    let written: Vec<_> = by
        .iter()
        .filter(|(_, (w, _, _))| *w > 0.0)
        .map(|(label, (w, _, _))| (label.as_str(), *w))
        .collect();
    assert_eq!(
        written,
        [("TxPut spend", 2.0), ("TxUpdate site", 2.0)],
        "{by:?}"
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    assert_eq!(sum_items(&h).await.len(), 3, "no sum item written");

    // Past midnight: tomorrow held, yesterday moved to its sum item, in
    // the same transaction, with what it held.
    let next = [put(DAY + 1, "1", 40, None), put(DAY, "1", 260, Some(250))];
    assert_eq!(
        spend.write_spend(&cond, &next).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    assert_eq!(
        held_spend(&h).await,
        [
            (format!("s@{}", day_ms(DAY)), "260".to_owned()),
            (format!("s@{}", day_ms(DAY + 1)), "40".to_owned()),
        ]
    );
    let moved = day_ms(DAY - 1);
    assert!(
        sum_items(&h).await.contains(&(moved, 100)),
        "yesterday's 100 in its sum item"
    );

    // A day moved in the same write that changes it: one action on its
    // sum item, the figures held and the change together.
    let both = [put(DAY + 2, "1", 10, None), put(DAY, "1", 300, Some(260))];
    assert_eq!(
        spend.write_spend(&cond, &both).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let today = day_ms(DAY);
    assert!(sum_items(&h).await.contains(&(today, 300)));
    assert_eq!(held_spend(&h).await.len(), 2);

    // A re-read of an older day goes to its sum item.
    let reread = [put(DAY - 8, "1", 90, Some(100))];
    assert_eq!(
        spend.write_spend(&cond, &reread).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    assert_eq!(held_spend(&h).await.len(), 2);

    // A write computed from figures no longer stored is refused whole,
    // the held figures unmoved.
    assert_eq!(
        spend.write_spend(&cond, &next).await.unwrap(),
        SpendWrite::Stale
    );
    h.assert_sums_match_rows("s1", "act_1").await;
}

#[tokio::test]
async fn an_unlink_moves_the_held_sums_to_their_items_for_the_purge_or_a_new_link() {
    let h = Harness::start().await;
    let cond = lease(&h).await;
    let spend = h.store().spend();
    let rows = [put(DAY - 1, "1", 70, None), put(DAY, "1", 30, None)];
    assert_eq!(
        spend.write_spend(&cond, &rows).await.unwrap(),
        SpendWrite::Written
    );
    assert_eq!(held_spend(&h).await.len(), 2);
    assert!(
        h.store()
            .links()
            .unlink_account("s1", "act_1", T0)
            .await
            .unwrap()
    );
    let mut items = sum_items(&h).await;
    items.sort();
    let days = [DAY - 1, DAY].map(day_ms);
    assert_eq!(items, [(days[0], 70), (days[1], 30)]);
    // The rows and their sums stay in step while the purge has not come.
    h.assert_sums_match_rows("s1", "act_1").await;
    // A run that lost its lease to the unlink writes nothing.
    let late = [put(DAY, "1", 99, Some(30))];
    assert_eq!(
        spend.write_spend(&cond, &late).await.unwrap(),
        SpendWrite::LostLease
    );
    let sums = spend
        .day_sums("s1", "act_1", 0, i64::MAX / 2)
        .await
        .unwrap();
    assert_eq!(
        sums.values().map(|f| f.spend_cents).sum::<i64>(),
        100,
        "{sums:?}"
    );
    assert!(sums.values().all(|f| *f != SpendFigures::default()));
}

/// A report reads the day sums of a site's accounts with its links read in
/// one query before the sum items and one after, not an item an account
/// twice; it answers what each account's own read answers, and its cap
/// counts days across the accounts in their order.
#[tokio::test]
async fn a_sites_day_sums_read_its_links_in_a_query_before_and_after() {
    let h = Harness::start().await;
    // Counts requests: a request the injected faults fail is retried.
    h.runner().stack.cloud.faults.set_share(0.0);
    let first = lease(&h).await;
    let store = h.store();
    let accounts = [account("act_1"), account("act_2")];
    store
        .connections()
        .put_connection("o1", vec![0], "v1", &accounts, &[], T0)
        .await
        .unwrap();
    store
        .links()
        .link_account("s1", "o1", &accounts[1], T0)
        .await
        .unwrap();
    assert!(
        store
            .links()
            .lease_link(
                "s1",
                "act_2",
                "run-2",
                T0,
                SyncInterval::DEFAULT,
                Found::Due
            )
            .await
            .unwrap()
    );
    let second = LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_2".into(),
        run_id: "run-2".into(),
    };
    // act_1: one day in its sum item, two held; act_2: one and one.
    for (cond, days) in [
        (&first, vec![DAY - 3, DAY - 1, DAY]),
        (&second, vec![DAY - 5, DAY]),
    ] {
        let rows: Vec<_> = days
            .into_iter()
            .map(|d| put(d, "1", 100 + d % 7, None))
            .collect();
        assert_eq!(
            store.spend().write_spend(cond, &rows).await.unwrap(),
            SpendWrite::Written
        );
    }
    let spend = store.spend();
    let one = spend
        .day_sums("s1", "act_1", 0, i64::MAX / 2)
        .await
        .unwrap();
    let two = spend
        .day_sums("s1", "act_2", 0, i64::MAX / 2)
        .await
        .unwrap();
    assert_eq!((one.len(), two.len()), (3, 2));

    let api = h.runner().stack.store_for("ApiFunction");
    api.counter.reset();
    let (sums, capped) = api
        .spend()
        .site_day_sums("s1", &["act_1", "act_2"], 0, i64::MAX / 2, usize::MAX)
        .await
        .unwrap();
    assert!(!capped);
    assert_eq!(sums.get("act_1"), Some(&one));
    assert_eq!(sums.get("act_2"), Some(&two));
    assert_eq!(
        ["Query site", "Get site", "Query sum"].map(|l| requests_of(&api, l)),
        [2, 0, 2],
        "the links twice, each account's sum items once: {:?}",
        api.counter.units_by()
    );

    // A past range holds no day on a link: the links are read once.
    api.counter.reset();
    let past = day_ms(DAY - 6)..=day_ms(DAY - 2);
    let (sums, _) = api
        .spend()
        .site_day_sums(
            "s1",
            &["act_1", "act_2"],
            *past.start(),
            *past.end(),
            usize::MAX,
        )
        .await
        .unwrap();
    assert_eq!(sums.values().map(|s| s.len()).sum::<usize>(), 2);
    assert_eq!(requests_of(&api, "Query site"), 1);

    // The cap counts days in all: act_1's three, then one of act_2's.
    let (sums, capped) = api
        .spend()
        .site_day_sums("s1", &["act_1", "act_2"], 0, i64::MAX / 2, 4)
        .await
        .unwrap();
    assert!(capped);
    assert_eq!(sums.get("act_1"), Some(&one));
    assert_eq!(sums.get("act_2").map(|s| s.len()), Some(1));
}

fn requests_of(store: &adtrail_store::Store, label: &str) -> u64 {
    store
        .counter
        .units_by()
        .get(label)
        .map_or(0, |(_, _, r)| *r)
}

/// A live ending to `next`, decided from the link as read: `blind` to a
/// sync asked for.
fn ending_to(
    next: i64,
    blind: bool,
) -> impl Fn(&SiteAdAccount) -> Option<(LinkUpdate, Seen)> + Send + Sync {
    move |link| {
        let seen = Seen {
            next_sync_at: link.next_sync_at,
            sync_requested: link.sync_requested && !blind,
            slot: None,
        };
        Some((live_ending(next), seen))
    }
}

/// A write of `changes` that ends the run as `end` decides.
async fn ending_write(
    h: &Harness,
    cond: &LeaseCondition,
    changes: &[RowChange],
    end: EndWith<'_>,
) -> SpendWrite {
    let spend = h.store().spend();
    spend
        .write_spend_ending(cond, changes, Some(end))
        .await
        .unwrap()
}

/// A run that went well ends in its last spend transaction: the rows, the
/// day's sum held on the link and the ending land together. An ending that
/// did not see a sync asked for since the write read the link is refused,
/// with the write (nothing lands, and the request stays); one that saw it
/// ends the run and clears it. A run whose lease is gone writes nothing.
#[tokio::test]
async fn a_run_ends_in_its_last_spend_write_unless_a_sync_was_asked_for_since() {
    let h = Harness::start().await;
    h.runner().stack.cloud.faults.set_share(0.0);
    let cond = lease(&h).await;
    let store = h.store();
    let next = T0 + 3_600_000;
    let (blind, seeing) = (ending_to(next, true), ending_to(next, false));
    store
        .links()
        .request_sync("s1", "act_1", T0 + 1)
        .await
        .unwrap();
    let today = [put(DAY, "1", 100, None)];
    assert_eq!(
        ending_write(&h, &cond, &today, &blind).await,
        SpendWrite::Stale
    );
    assert_eq!(held_spend(&h).await, vec![], "nothing written");
    let asked = store
        .links()
        .get_link("s1", "act_1")
        .await
        .unwrap()
        .unwrap();
    assert!(asked.run_id.is_some() && asked.sync_requested, "{asked:?}");

    assert_eq!(
        ending_write(&h, &cond, &today, &seeing).await,
        SpendWrite::Ended
    );
    assert_eq!(
        held_spend(&h).await,
        [(format!("s@{}", day_ms(DAY)), "100".to_owned())]
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let ended = store
        .links()
        .get_link("s1", "act_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ended.run_id, None, "the lease is released");
    assert!(!ended.sync_requested, "the request is cleared");
    assert_eq!(ended.last_sync_at, Some(T0));
    assert_eq!(ended.next_sync_at, Some(next));

    // Another execution of the ended run: its lease is gone.
    let again = [put(DAY, "1", 200, Some(100))];
    assert_eq!(
        ending_write(&h, &cond, &again, &seeing).await,
        SpendWrite::LostLease
    );
    h.assert_sums_match_rows("s1", "act_1").await;
}
