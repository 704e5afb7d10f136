//! Leases: a run that lost its lease writes nothing, a run whose message
//! SQS refused goes when its lease ends, duplicates change nothing,
//! unlinks and relinks during runs and purges.

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use adtrail_fake_meta::Knobs;
use adtrail_store::queue::SyncMessage;
use adtrail_tests::*;
use serde_json::json;

#[tokio::test]
async fn a_run_that_lost_its_lease_writes_nothing() {
    let h = Harness::start().await;
    h.link_agency().await;
    // Run A is leased and its message sent; the worker never gets to it.
    assert_eq!(h.runner().dispatch().await.unwrap().sent, 4);
    let run_a = h.link("loja-x", LOJA_PRINCIPAL).await.run_id.unwrap();
    // The lease runs out: run B takes the account, and says so.
    h.runner()
        .advance(adtrail_domain::plan::SyncInterval::DEFAULT.lease_ms() + MINUTE_MS)
        .await
        .unwrap();
    assert_eq!(h.runner().dispatch().await.unwrap().sent, 4);
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_ne!(link.run_id.as_deref(), Some(run_a.as_str()));
    assert!(link.last_error.unwrap().starts_with("RUN_TIMEOUT: "));
    // Run A's late message does nothing.
    let message = SyncMessage {
        site_id: "loja-x".into(),
        ad_account_id: LOJA_PRINCIPAL.into(),
        run_id: run_a,
    };
    let report = h
        .runner()
        .worker
        .run(
            &message,
            std::time::Instant::now() + std::time::Duration::from_secs(60),
        )
        .await
        .unwrap();
    assert!(report.stale);
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert!(rows.is_empty());
    // Draining delivers both messages of each account; only run B's writes.
    h.fake().clear_requests();
    let drained = h.runner().drain().await.unwrap();
    assert_eq!(drained.delivered, 8);
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL).len(),
        1,
        "one run read Meta"
    );
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

/// SQS refusing the dispatcher's messages through every retry: the runs
/// stay leased, end as `RUN_TIMEOUT` when their lease does, and go then.
#[tokio::test]
async fn runs_whose_messages_sqs_refused_go_when_their_lease_ends() {
    let h = Harness::start().await;
    h.link_agency().await;
    let faults = &h.runner().stack.cloud.faults;
    faults.refuse_next_batches(adtrail_store::retry::MAX_ATTEMPTS);
    let report = h.runner().dispatch().await.unwrap();
    assert_eq!((report.leased, report.sent), (4, 0));
    assert_eq!(h.runner().drain().await.unwrap().delivered, 0);
    h.runner()
        .advance(adtrail_domain::plan::SyncInterval::DEFAULT.lease_ms() + MINUTE_MS)
        .await
        .unwrap();
    assert_eq!(h.runner().dispatch().await.unwrap().sent, 4);
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(link.last_error.unwrap().starts_with("RUN_TIMEOUT: "));
    assert_eq!(h.runner().drain().await.unwrap().delivered, 4);
    assert_eq!(h.insights_ranges(LOJA_PRINCIPAL).len(), 1);
}

#[tokio::test]
async fn a_duplicate_delivery_changes_nothing_and_reads_meta_once() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.runner().dispatch().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    let body = serde_json::to_string(&SyncMessage {
        site_id: "loja-x".into(),
        ad_account_id: LOJA_PRINCIPAL.into(),
        run_id: link.run_id.clone().unwrap(),
    })
    .unwrap();
    // SQS delivers the message a second time, in the same batch or a later one.
    h.store()
        .queues()
        .send_batch(&h.store().names.sync_queue_url, std::slice::from_ref(&body))
        .await
        .unwrap();
    h.runner().drain().await.unwrap();
    h.store()
        .queues()
        .send_batch(&h.store().names.sync_queue_url, &[body])
        .await
        .unwrap();
    let late = h.runner().drain().await.unwrap();
    assert_eq!(late.delivered, 1, "the late copy is taken off the queue");
    assert_eq!(h.insights_ranges(LOJA_PRINCIPAL).len(), 1);
    let after = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(
        after.backfill_from.as_deref(),
        Some("2026-05-02"),
        "one block, not two"
    );
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

#[tokio::test]
async fn two_dispatchers_at_once_send_exactly_one_message_per_due_account() {
    let h = Harness::start().await;
    h.link_agency().await;
    let (a, b) = tokio::join!(h.runner().dispatch(), h.runner().dispatch());
    assert_eq!(a.unwrap().sent + b.unwrap().sent, 4);
    let drained = h.runner().drain().await.unwrap();
    assert_eq!(drained.delivered, 4);
}

#[tokio::test]
async fn an_unlink_mid_run_stops_its_writes_and_the_sweeper_purges_the_spend() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert!(!rows.is_empty());
    // A weekly run, slowed down, is in flight when the account is unlinked.
    h.fake().set_knobs(Knobs {
        latency_ms: 150,
        row_cap: Some(60),
        ..Knobs::default()
    });
    h.runner()
        .set_clock(T0 + 7 * DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await
        .unwrap();
    h.runner().dispatch().await.unwrap();
    let drain = h.runner().drain();
    let unlink = async {
        // Wait until the run has started reading Meta.
        while !h
            .fake()
            .requests()
            .iter()
            .any(|r| r.path.ends_with(&format!("{LOJA_PRINCIPAL}/insights")))
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let (status, body) = h
            .call(
                "DELETE",
                &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        h.all_rows("loja-x", LOJA_PRINCIPAL).await
    };
    let (drained, at_unlink) = tokio::join!(drain, unlink);
    drained.unwrap();
    let after_run = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(after_run, at_unlink, "nothing was written after the unlink");
    // The sweeper takes the spend out, sums included; the other account stays.
    h.fake().set_knobs(Knobs::default());
    let sweep = h.runner().sweep().await.unwrap();
    assert_eq!(sweep.purges_done, 1);
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert!(rows.is_empty());
    assert!(
        h.store()
            .spend()
            .day_sums("loja-x", LOJA_PRINCIPAL, 0, i64::MAX / 2)
            .await
            .unwrap()
            .is_empty()
    );
    h.assert_sums_match_rows("loja-x", LOJA_MANAUS).await;
    let (_, status) = h.call("GET", "/v1/meta/status?siteIds=loja-x", None).await;
    assert_eq!(
        status["sites"][0]["adAccounts"].as_array().unwrap().len(),
        1
    );
}

#[tokio::test]
async fn a_relink_during_the_purge_stops_it_and_the_backfill_rewrites() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let before = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    h.call(
        "DELETE",
        &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
        None,
    )
    .await;
    // One purge step takes part of the rows, sums in step.
    h.store()
        .spend()
        .purge_step("loja-x", LOJA_PRINCIPAL, 100)
        .await
        .unwrap();
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
    let (status, body) = h
        .call(
            "PUT",
            &format!("/v1/sites/loja-x/ad-accounts/{LOJA_PRINCIPAL}"),
            Some(json!({"ownerKey": "agency"})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let sweep = h.runner().sweep().await.unwrap();
    assert_eq!(
        (sweep.purges_done, sweep.purge_steps),
        (0, 0),
        "the relink removed the purge"
    );
    h.sync_until_live(10).await;
    let after = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(after.len(), before.len());
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

/// SQS hands a run's message to two workers at once (a duplicate delivery
/// while the first copy still runs): both hold the same lease, both read
/// Meta, and the day sums must still equal a recount of the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_executions_of_one_run_at_once_count_spend_once() {
    use aws_lambda_events::sqs::{SqsEvent, SqsMessage};
    use lambda_runtime::{Context, LambdaEvent};
    let h = Harness::start().await;
    h.link_agency().await;
    h.runner().dispatch().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    let body = serde_json::to_string(&SyncMessage {
        site_id: "loja-x".into(),
        ad_account_id: LOJA_PRINCIPAL.into(),
        run_id: link.run_id.clone().unwrap(),
    })
    .unwrap();
    let event = |id: &str| {
        let mut m = SqsMessage::default();
        m.message_id = Some(id.into());
        m.body = Some(body.clone());
        let mut e = SqsEvent::default();
        e.records = vec![m];
        LambdaEvent::new(e, Context::default())
    };
    // Slow answers, so both copies read before either writes.
    h.fake().tune(|k| k.latency_ms = 40);
    let worker = &h.runner().worker;
    let (a, b) = tokio::join!(
        adtrail_sync_worker::handle(worker, event("first")),
        adtrail_sync_worker::handle(worker, event("second")),
    );
    assert!(a.is_ok() && b.is_ok());
    assert!(!h.all_rows("loja-x", LOJA_PRINCIPAL).await.is_empty());
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

/// An operator's longer interval (`SyncIntervalMinutes` = 180): each lease
/// holds the account three hours, a live account is not read in between,
/// and the live runs keep three hours from one lease to the next.
#[tokio::test]
async fn a_longer_interval_spaces_the_live_syncs_and_their_leases() {
    use adtrail_domain::plan::SyncInterval;
    let three_hours = SyncInterval::from_minutes("180").unwrap();
    let h = Harness::start_every(T0, three_hours).await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let live = h.link("loja-x", LOJA_PRINCIPAL).await;
    let next = live.next_sync_at.unwrap();
    assert!(
        next > h.now() + 3 * HOUR_MS - MINUTE_MS && next <= h.now() + 3 * HOUR_MS,
        "the last backfill block's lease, three hours on: {next} against {}",
        h.now()
    );
    // The seed's 45 minutes on, and two hours on: nothing is due.
    h.fake().clear_requests();
    for _ in 0..2 {
        h.runner().advance(45 * MINUTE_MS).await.unwrap();
        assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 0);
    }
    h.runner().advance(HOUR_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    assert!(h.insights_ranges(LOJA_PRINCIPAL).is_empty());
    // Its time: the lease holds three hours, and the run keeps that time.
    h.runner().set_clock(next).await.unwrap();
    assert_eq!(h.runner().dispatch().await.unwrap().leased, 4);
    let leased = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(leased.next_sync_at, Some(next + 3 * HOUR_MS));
    assert!(leased.run_id.is_some());
    h.runner().drain().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-29".to_owned(), "2026-06-30".to_owned())]
    );
    let after = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(after.run_id.is_none() && after.last_sync_at == Some(next));
    assert_eq!(after.next_sync_at, Some(next + 3 * HOUR_MS));
}

/// An account whose campaigns are all off (the big agency's extra account:
/// Meta lists nothing in its insights) goes on the quiet cadence, three
/// hours from one lease to the next, while a delivering account of the same
/// site keeps the 45 minutes.
#[tokio::test]
async fn an_account_that_delivers_nothing_is_synced_at_the_quiet_interval() {
    const IDLE: &str = "act_8000000000";
    let h = Harness::start().await;
    h.fake().tune(|k| k.extra_accounts = 1);
    h.link_agency().await;
    h.link_account("loja-x", IDLE, "agency").await;
    h.sync_until_live(10).await;
    // The first live run of each: the idle account read and found empty.
    let first = h.link("loja-x", IDLE).await.next_sync_at.unwrap();
    h.runner().set_clock(first).await.unwrap();
    h.runner().tick().await.unwrap();
    h.runner().drain().await.unwrap();
    let (idle, busy) = (
        h.link("loja-x", IDLE).await,
        h.link("loja-x", LOJA_PRINCIPAL).await,
    );
    assert_eq!(idle.last_sync_at, Some(first), "the idle account ran");
    assert_eq!(idle.next_sync_at, Some(first + 3 * HOUR_MS));
    assert_eq!(idle.lease_ms, Some(3 * HOUR_MS));
    assert!(idle.last_error.is_none(), "{:?}", idle.last_error);
    let busy_next = busy.next_sync_at.unwrap();
    assert!(busy_next <= h.now() + 45 * MINUTE_MS, "{busy_next}");
    // For the next two hours and more, only the delivering accounts sync.
    h.fake().clear_requests();
    while h.now() + 15 * MINUTE_MS < first + 3 * HOUR_MS {
        h.runner().advance(15 * MINUTE_MS).await.unwrap();
        h.runner().tick().await.unwrap();
    }
    assert_eq!(h.insights_ranges(IDLE), vec![]);
    assert!(h.insights_ranges(LOJA_PRINCIPAL).len() >= 3);
    // Its time: its lease now holds it three hours, so the run, still
    // quiet, leaves it where the lease put it.
    h.runner().set_clock(first + 3 * HOUR_MS).await.unwrap();
    h.runner().dispatch().await.unwrap();
    let leased = h.link("loja-x", IDLE).await;
    assert!(leased.run_id.is_some());
    assert_eq!(leased.next_sync_at, Some(first + 6 * HOUR_MS));
    assert_eq!(leased.lease_ms, Some(3 * HOUR_MS));
    h.runner().drain().await.unwrap();
    assert_eq!(h.insights_ranges(IDLE).len(), 1);
    assert_eq!(
        h.link("loja-x", IDLE).await.next_sync_at,
        Some(first + 6 * HOUR_MS)
    );
}

/// DynamoDB's eventual reads may miss the last second's writes (moto's
/// never do; the local cloud's `stale_gets` makes them): runs whose reads
/// of their link miss it read it again strongly, and every run goes as it
/// would. A run that writes today's spend ends in that write, which reads
/// the link strongly; one that fails ends alone, after an eventual read.
#[tokio::test]
async fn runs_whose_eventual_reads_of_their_link_are_stale_go_as_usual() {
    let h = Harness::start().await;
    h.link_agency().await;
    let next = h.at_first_live_sync().await;
    h.fake().clear_requests();
    h.runner().stack.cloud.stale_gets("link#", 4);
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 4);
    assert_eq!(
        h.runner().stack.cloud.stale_gets_left(),
        0,
        "each start's read missed"
    );
    for (site, account) in [
        ("loja-x", LOJA_PRINCIPAL),
        ("loja-x", LOJA_MANAUS),
        ("pet-mania", PET_EAST),
        ("pet-mania", PET_WEST),
    ] {
        assert_eq!(h.insights_ranges(account).len(), 1, "{account} was read");
        let link = h.link(site, account).await;
        assert!(link.run_id.is_none(), "{account}'s run ended");
        assert!(link.last_sync_at >= Some(next), "{account}");
        assert!(link.last_error.is_none(), "{:?}", link.last_error);
        assert!(link.next_sync_at > Some(h.now()), "{account}");
    }
    // The next runs are refused by Meta: their starts' and their endings'
    // reads miss, and each failure is recorded all the same.
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    h.fake().tune(|k| k.deny_permission = true);
    h.runner().stack.cloud.stale_gets("link#", 8);
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 4);
    assert_eq!(
        h.runner().stack.cloud.stale_gets_left(),
        0,
        "each read missed"
    );
    for (site, account) in [("loja-x", LOJA_PRINCIPAL), ("pet-mania", PET_WEST)] {
        let link = h.link(site, account).await;
        assert!(link.run_id.is_none(), "{account}'s run ended");
        assert!(link.last_error.is_some(), "{account}: {link:?}");
    }
}

/// A run whose eventual read of its connection is stale (it misses the
/// token) does not pause anything: its ending reads the connection
/// strongly, finds a token it did not use, and the account runs again at
/// once, as it would after a new token.
#[tokio::test]
async fn a_run_whose_read_of_its_connection_is_stale_runs_again_at_once() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.at_first_live_sync().await;
    h.runner().stack.cloud.stale_gets("connection", 1);
    h.runner().dispatch().await.unwrap();
    h.runner().drain().await.unwrap();
    let due: Vec<_> = h
        .store()
        .links()
        .site_links("loja-x")
        .await
        .unwrap()
        .into_iter()
        .chain(h.store().links().site_links("pet-mania").await.unwrap())
        .filter(|l| l.next_sync_at <= Some(h.now()))
        .collect();
    assert_eq!(due.len(), 1, "one run missed its token and is due again");
    assert!(due[0].last_error.is_none(), "{:?}", due[0].last_error);
    let connection = h.connection("agency").await;
    assert_eq!(
        connection.status,
        adtrail_domain::pixels::ConnectionStatus::Active
    );
    // The next tick syncs it.
    h.fake().clear_requests();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 1);
    assert_eq!(h.insights_ranges(&due[0].ad_account_id).len(), 1);
}
