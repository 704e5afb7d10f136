//! Links that keep their cadence sit at a slot of its cycle: the
//! dispatcher's walk finds each once a cycle, their runs write the link and
//! no index entry, and anything off the cadence (a sync asked for, a
//! back-off) takes a link to `due` until a run keeps the cadence again.

use adtrail_domain::links::{Cadence, SlotPlace};
use adtrail_domain::time::{HOUR_MS, MINUTE_MS};
use adtrail_tests::*;

/// The four accounts of the sample agency.
const ACCOUNTS: usize = 4;

/// The link writes (`Update site`) of what ran since the counter's reset:
/// write units and requests.
fn link_writes(h: &Harness) -> (f64, u64) {
    let by = h.store().counter.units_by();
    by.get("Update site")
        .map_or((0.0, 0), |(write, _, requests)| (*write, *requests))
}

#[tokio::test]
async fn a_run_that_keeps_its_cadence_moves_no_index_entry_and_is_found_once_a_cycle() {
    let h = Harness::start().await;
    h.link_agency().await;
    // The first live runs end on the cadence: each link takes its slot.
    let first = h.at_first_live_sync().await;
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, ACCOUNTS);
    let placed = h.link("loja-x", LOJA_PRINCIPAL).await;
    let next = first + 45 * MINUTE_MS;
    assert_eq!(
        placed.slot,
        Some(SlotPlace {
            cadence: Cadence::Interval,
            slot: next % (45 * MINUTE_MS),
        })
    );
    assert_eq!(placed.next_sync_at, Some(next));
    // Three cycles, a tick a minute: each account leased once a cycle, at
    // its time, and its runs write the link twice, and no index entry
    // moves: the lease (a unit), and the ending, in the transaction that
    // writes today's spend (its update of the link checks the lease, and
    // holds today's sum: 2 units, as any item of a transaction).
    // Counted without the suite's injected faults: a retried write is a
    // request (and its units) more.
    h.runner().stack.cloud.faults.set_share(0.0);
    h.store().counter.reset();
    let mut leased = 0;
    for _ in 0..3 * 45 {
        h.runner().advance(MINUTE_MS).await.unwrap();
        leased += h.runner().tick().await.unwrap().dispatched.leased;
    }
    assert_eq!(leased, 3 * ACCOUNTS);
    let (units, requests) = link_writes(&h);
    assert_eq!(
        requests, leased as u64,
        "a lease a run, and no ending alone"
    );
    assert_eq!(units, requests as f64, "one unit a write: no index entry");
    let by = h.store().counter.units_by();
    let (ended, _, _) = by["TxUpdate site"];
    assert_eq!(ended, 2.0 * leased as f64, "{by:?}");
    let after = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(after.slot, placed.slot, "the same slot, three cycles on");
    assert_eq!(after.next_sync_at, Some(first + 4 * 45 * MINUTE_MS));
    assert_eq!(after.last_sync_at, Some(first + 3 * 45 * MINUTE_MS));
    // The walk: a query a cadence a tick (one more as it passes a cycle's
    // end: three times for 45 minutes, once at most for 180), whatever the
    // links, and the cursor moved on, one write a tick.
    let queries = by["Query index slot"].2;
    assert!(
        (2 * 3 * 45 + 3..=2 * 3 * 45 + 4).contains(&queries),
        "{queries}"
    );
    assert_eq!(by["Update dispatch"].2, 3 * 45);
}

#[tokio::test]
async fn a_sync_asked_for_leaves_the_slot_for_one_run_and_the_next_ending_takes_one_again() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.at_first_live_sync().await;
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.link("loja-x", LOJA_PRINCIPAL)
            .await
            .slot
            .map(|p| p.cadence),
        Some(Cadence::Interval)
    );
    // Ten minutes on, a sync asked for: out of the slot, due now.
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    let (status, _) = h.call("POST", "/v1/sites/loja-x/sync", None).await;
    assert_eq!(status, 202);
    let asked = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!((asked.slot, asked.next_sync_at), (None, Some(h.now())));
    let ran_at = h.now();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 2);
    // The run kept the cadence from its own time: a slot again, 45
    // minutes on from it, and the walk finds it there.
    let again = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(again.last_sync_at, Some(ran_at));
    assert_eq!(again.slot.map(|p| p.cadence), Some(Cadence::Interval));
    assert_eq!(again.next_sync_at, Some(ran_at + 45 * MINUTE_MS));
    // There, with pet-mania's two, whose slots passed ten minutes before.
    h.runner().set_clock(ran_at + 45 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, ACCOUNTS);
    assert_eq!(
        h.link("loja-x", LOJA_PRINCIPAL).await.last_sync_at,
        Some(ran_at + 45 * MINUTE_MS)
    );
}

/// A dispatcher that misses ticks (its schedule failed, or its function
/// was throttled) finds the links whose slots passed meanwhile at its next
/// tick, each once.
#[tokio::test]
async fn a_walk_after_missed_ticks_finds_the_slots_that_passed_each_once() {
    let h = Harness::start().await;
    h.link_agency().await;
    let first = h.at_first_live_sync().await;
    h.runner().tick().await.unwrap();
    // Two hours without a tick: every slot passed at least twice, and the
    // next tick runs each account once.
    h.runner().set_clock(first + 2 * HOUR_MS).await.unwrap();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, ACCOUNTS);
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 0);
    // A slot's next time, a lease on, was behind the clock: the runs
    // start the cadence again from now (in `due`, until a run keeps it).
    let late = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(late.slot, None);
    assert_eq!(late.next_sync_at, Some(h.now() + 45 * MINUTE_MS));
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, ACCOUNTS);
    let kept = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(kept.slot.map(|p| p.cadence), Some(Cadence::Interval));
}

/// An operator who changes `SyncIntervalMinutes` redeploys the functions
/// over the same table: each account takes a slot of the new cycle, its
/// first run under it at most one new interval late, and then runs once a
/// new interval.
#[tokio::test]
async fn a_new_interval_places_each_account_at_a_slot_of_its_cycle() {
    use adtrail_domain::plan::SyncInterval;
    let h = Harness::start().await;
    h.link_agency().await;
    h.at_first_live_sync().await;
    h.runner().tick().await.unwrap();
    // The hard case: the next time is half a new cycle off the slot's
    // point in it (the slot, read on the new cycle, comes 45 minutes
    // before it). One more run at the old interval when it is not.
    let next = h.link("loja-x", LOJA_PRINCIPAL).await.next_sync_at.unwrap();
    if next % (90 * MINUTE_MS) == next % (45 * MINUTE_MS) {
        h.runner().set_clock(next).await.unwrap();
        h.runner().tick().await.unwrap();
    }
    let old = h.runner();
    let ninety = SyncInterval::from_minutes("90").unwrap();
    let redeployed = adtrail_local::Runner::new(
        old.stack.clone(),
        old.sender.graph.clone(),
        old.sender.platforms.clone(),
        old.clock.clone(),
        ninety,
        SyncInterval::QUIET_DEFAULT,
    );
    let deployed_at = h.now();
    let accounts = [
        ("loja-x", LOJA_PRINCIPAL),
        ("loja-x", LOJA_MANAUS),
        ("pet-mania", PET_EAST),
        ("pet-mania", PET_WEST),
    ];
    let mut runs: Vec<Vec<i64>> = vec![vec![]; accounts.len()];
    // Each account's next sync time as the last run left it: the next run
    // comes at the first tick after it, not later.
    let mut due: Vec<i64> = vec![0; accounts.len()];
    // Six hours, a tick every five minutes.
    for _ in 0..6 * 12 {
        redeployed.advance(5 * MINUTE_MS).await.unwrap();
        redeployed.tick().await.unwrap();
        for (i, (site, account)) in accounts.iter().enumerate() {
            let link = h.link(site, account).await;
            let last = link.last_sync_at.unwrap();
            if last > deployed_at && runs[i].last() != Some(&last) {
                if !runs[i].is_empty() {
                    assert!(
                        last - due[i] < 5 * MINUTE_MS,
                        "{account}: ran {} min after its time",
                        (last - due[i]) / MINUTE_MS
                    );
                }
                runs[i].push(last);
                due[i] = link.next_sync_at.unwrap();
            }
        }
    }
    for (i, times) in runs.iter().enumerate() {
        let (site, account) = accounts[i];
        assert!(
            times[0] - deployed_at <= 45 * MINUTE_MS + 90 * MINUTE_MS,
            "{account}: first run {} min after the new interval",
            (times[0] - deployed_at) / MINUTE_MS
        );
        let gaps: Vec<i64> = times
            .windows(2)
            .map(|w| (w[1] - w[0]) / MINUTE_MS)
            .collect();
        assert!(gaps.len() >= 2, "{account}: {gaps:?}");
        assert!(gaps[1..].iter().all(|g| *g == 90), "{account}: {gaps:?}");
        let link = h.link(site, account).await;
        let next = link.next_sync_at.unwrap();
        assert_eq!(
            link.slot,
            Some(SlotPlace {
                cadence: Cadence::Interval,
                slot: next % (90 * MINUTE_MS),
            }),
            "{account}"
        );
    }
}

/// More links at one slot than a walk takes in a tick (all leased from
/// `due` in one tick share one): the next walk reads that slot on past the
/// ones already leased, so each is leased once and the walk gets past it.
#[tokio::test]
async fn a_slot_holding_more_links_than_a_walk_takes_is_read_on_until_past_it() {
    use adtrail_domain::plan::SyncInterval;
    use adtrail_store::lease::{Found, Seen};
    const LINKS: usize = 8;
    let h = Harness::start().await;
    let store = h.store();
    let now = h.now();
    let interval = SyncInterval::DEFAULT;
    let ids: Vec<String> = (0..LINKS).map(|i| format!("act_7{i:09}")).collect();
    store
        .sites()
        .put_site("s1", "S", "USD", None, now)
        .await
        .unwrap();
    let listed: Vec<_> = ids.iter().map(|id| crate::store::account(id)).collect();
    store
        .connections()
        .put_connection("o1", vec![0], "v1", &listed, &[], now)
        .await
        .unwrap();
    // Each linked, leased in one tick and ended on the cadence: one slot.
    let next = now + interval.lease_ms();
    for (id, listed) in ids.iter().zip(&listed) {
        let links = store.links();
        links.link_account("s1", "o1", listed, now).await.unwrap();
        assert!(
            links
                .lease_link("s1", id, "r0", now, interval, Found::Due)
                .await
                .unwrap()
        );
        // The harness starts at T0, the ending's time.
        let ending = adtrail_domain::outcome::LinkUpdate {
            slot: Some(SlotPlace {
                cadence: Cadence::Interval,
                slot: next % interval.ms(),
            }),
            ..crate::store_leases::live_ending(next)
        };
        let seen = Seen {
            next_sync_at: Some(next),
            ..Seen::default()
        };
        assert!(
            links
                .finish_run("s1", id, "r0", &ending, &seen)
                .await
                .unwrap()
        );
    }
    let runner = h.runner();
    let mut dispatcher = runner.dispatcher.clone();
    dispatcher.slot_budget = 3;
    // Each tick, a minute on: three (the budget), then the five left past
    // the three already leased, then none.
    let mut leased = vec![];
    runner.set_clock(next).await.unwrap();
    for _ in 0..3 {
        leased.push(dispatcher.dispatch().await.unwrap().leased);
        runner.advance(MINUTE_MS).await.unwrap();
    }
    assert_eq!(leased, vec![3, LINKS - 3, 0]);
    for id in &ids {
        let link = store.links().get_link("s1", id).await.unwrap().unwrap();
        assert_eq!(link.next_sync_at, Some(next + interval.lease_ms()), "{id}");
    }
}
