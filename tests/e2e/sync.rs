//! The sync end to end, through the queues: the dispatcher leases, the
//! worker reads the fake Meta and writes under the lease, outcomes and
//! back-offs land on the account as seed 000 says.

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use adtrail_fake_meta::{Knobs, Throttle};
use adtrail_store::queue::SyncMessage;
use adtrail_tests::*;
use serde_json::json;

#[tokio::test]
async fn a_backfill_reads_90_days_in_three_blocks_then_goes_live() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    // 12:00Z on June 30th is 09:00 in São Paulo: the same local date.
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![
            ("2026-04-02".to_owned(), "2026-05-01".to_owned()),
            ("2026-05-02".to_owned(), "2026-05-31".to_owned()),
            ("2026-06-01".to_owned(), "2026-06-30".to_owned()),
        ]
    );
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.sync_state.as_str(), "live");
    assert!(link.last_sync_at.is_some() && link.backfill_from.is_none() && link.run_id.is_none());
    assert_eq!(
        link.next_sync_at,
        Some(h.now() + 45 * MINUTE_MS),
        "live: every 45 minutes"
    );
    // The last block read the catalog, thumbnails included.
    let catalog = h.store().catalog().site_catalog("loja-x").await.unwrap();
    assert_eq!(catalog.len(), 48);
    let ad = catalog
        .values()
        .find(|c| c.ad_account_id.as_deref() == Some(LOJA_PRINCIPAL))
        .unwrap();
    assert!(ad.ad_name.is_some() && ad.ad_status.is_some() && ad.creative_type.is_some());
    let key = ad.thumbnail_key.clone().expect("a thumbnail copied");
    assert_eq!(
        &h.store().blobs().get_thumbnail(&key).await.unwrap()[..4],
        b"\x89PNG"
    );
    for (site, account) in [
        ("loja-x", LOJA_PRINCIPAL),
        ("loja-x", LOJA_MANAUS),
        ("pet-mania", PET_EAST),
        ("pet-mania", PET_WEST),
    ] {
        h.assert_sums_match_rows(site, account).await;
    }

    // 45 minutes on: today and yesterday.
    h.fake().clear_requests();
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-29".to_owned(), "2026-06-30".to_owned())]
    );

    // The next local day after 04:00 (07:00Z in São Paulo): the daily 7 days
    // and the catalog; a week after the backfill the weekly 28 days.
    h.fake().clear_requests();
    h.runner()
        .set_clock(T0 + DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await
        .unwrap(); // 07:30Z July 1st
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-25".to_owned(), "2026-07-01".to_owned())]
    );
    assert!(
        h.fake()
            .requests()
            .iter()
            .any(|r| r.path == format!("/v25.0/{LOJA_PRINCIPAL}/ads"))
    );
    h.fake().clear_requests();
    h.runner()
        .set_clock(T0 + 7 * DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await
        .unwrap();
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-10".to_owned(), "2026-07-07".to_owned())]
    );
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

#[tokio::test]
async fn spend_is_null_until_the_backfill_ends_then_known_per_day() {
    let h = Harness::start().await;
    h.link_agency().await;
    let to = T0 - T0 % DAY_MS;
    let from = to - 29 * DAY_MS;
    let (status, before) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={from}&to={to}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{before}");
    assert_eq!(before["totals"]["spendCents"], json!(null));
    assert_eq!(before["days"].as_array().unwrap().len(), 30);
    assert_eq!(before["days"][0]["spendCents"], json!(null));
    assert_eq!(before["spendCurrency"], json!(null));

    h.sync_until_live(10).await;
    let (_, after) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={from}&to={to}"),
            None,
        )
        .await;
    assert_eq!(after["spendCurrency"], "BRL");
    assert_eq!(after["currencyMismatch"], false);
    let days = after["days"].as_array().unwrap();
    let sum: i64 = days.iter().map(|d| d["spendCents"].as_i64().unwrap()).sum();
    assert_eq!(after["totals"]["spendCents"].as_i64().unwrap(), sum);
    assert!(sum > 0);
    let ads: i64 = after["ads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["spendCents"].as_i64().unwrap())
        .sum();
    assert_eq!(ads, sum, "the per-ad list and the per-day sums agree");
    assert!(after["ads"][0]["adName"].is_string());
    // A range before any spend: zero, not null, since the accounts are synced.
    let old = from - 200 * DAY_MS;
    let (_, empty) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={old}&to={old}"),
            None,
        )
        .await;
    assert_eq!(empty["totals"]["spendCents"], json!(0));
}

#[tokio::test]
async fn an_account_billing_in_another_currency_gives_null_spend_with_a_mismatch() {
    let h = Harness::start().await;
    h.call(
        "PUT",
        "/v1/sites/loja-x",
        Some(json!({"name": "Loja X", "currency": "BRL"})),
    )
    .await;
    h.connect(TOKEN).await;
    for account in [LOJA_PRINCIPAL, PET_EAST] {
        let (s, b) = h
            .call(
                "PUT",
                &format!("/v1/sites/loja-x/ad-accounts/{account}"),
                Some(json!({"ownerKey": "agency"})),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    for _ in 0..4 {
        h.runner().tick().await.unwrap();
        h.runner().advance(2_000).await.unwrap();
    }
    let day = T0 - T0 % DAY_MS;
    let (_, spend) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={}&to={day}", day - 6 * DAY_MS),
            None,
        )
        .await;
    assert_eq!(spend["currencyMismatch"], true);
    assert_eq!(spend["spendCurrency"], json!(null));
    assert_eq!(spend["totals"]["spendCents"], json!(null));
    assert!(spend["totals"]["impressions"].as_i64().unwrap() > 0);
    for account in spend["adAccounts"].as_array().unwrap() {
        assert!(
            account["spendCents"].as_i64().unwrap() > 0,
            "each account's own figures are still shown"
        );
    }
}

#[tokio::test]
async fn throttling_waits_at_least_an_hour_or_what_meta_says() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.fake().set_knobs(Knobs {
        throttle: Some(Throttle {
            code: 17,
            remaining: 100,
            regain_minutes: 90,
            only_path: None,
        }),
        ..Knobs::default()
    });
    h.runner().tick().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("RATE_LIMITED: "),
        "{:?}",
        link.last_error
    );
    assert_eq!(link.next_sync_at, Some(h.now() + 90 * MINUTE_MS));
    assert_eq!(link.failures, 1);
    assert_eq!(
        link.sync_state.as_str(),
        "backfill",
        "a throttle keeps the backfill owed"
    );

    // Usage above 75% on a successful run also backs off an hour.
    h.fake().set_knobs(Knobs {
        usage_pct: Some(80),
        ..Knobs::default()
    });
    h.runner().advance(90 * MINUTE_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(
        link.backfill_from.as_deref(),
        Some("2026-05-02"),
        "the first block was saved"
    );
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("RATE_LIMITED")
    );
    assert_eq!(link.next_sync_at, Some(h.now() + HOUR_MS));
    assert_eq!(link.failures, 0);
}

#[tokio::test]
async fn failures_back_off_15_minutes_doubling_and_sync_now_overrides() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.fake().set_knobs(Knobs {
        fail_5xx: 1_000,
        ..Knobs::default()
    });
    let mut waits = vec![];
    for _ in 0..3 {
        h.runner().tick().await.unwrap();
        let link = h.link("loja-x", LOJA_PRINCIPAL).await;
        assert!(
            link.last_error
                .as_deref()
                .unwrap()
                .starts_with("META_UNAVAILABLE: ")
        );
        let wait = link.next_sync_at.unwrap() - h.now();
        waits.push(wait / MINUTE_MS);
        h.runner().advance(wait).await.unwrap();
    }
    assert_eq!(waits, vec![15, 30, 60]);
    // Asking for a sync now overrides the back-off.
    h.fake().set_knobs(Knobs::default());
    h.runner().advance(MINUTE_MS).await.unwrap();
    let (status, body) = h.call("POST", "/v1/sites/loja-x/sync", None).await;
    assert_eq!((status, body["requested"].clone()), (202, json!(2)));
    let report = h.runner().tick().await.unwrap();
    assert!(report.dispatched.sent >= 2);
    assert_eq!(h.link("loja-x", LOJA_PRINCIPAL).await.failures, 0);
}

#[tokio::test]
async fn a_token_refused_mid_run_stops_every_account_until_a_new_token() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.sync_until_live(10).await;
    h.fake().kill_token(TOKEN);
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    for (site, account) in [
        ("loja-x", LOJA_PRINCIPAL),
        ("loja-x", LOJA_MANAUS),
        ("pet-mania", PET_EAST),
        ("pet-mania", PET_WEST),
    ] {
        let link = h.link(site, account).await;
        assert_eq!(link.sync_state.as_str(), "error");
        assert!(
            link.last_error
                .as_deref()
                .unwrap()
                .starts_with("META_TOKEN_INVALID: ")
        );
        assert_eq!(link.next_sync_at, None, "paused: out of the due index");
    }
    let (_, conn) = h.call("GET", "/v1/meta/connections/agency", None).await;
    assert_eq!(conn["status"], "invalid");
    assert!(conn["invalidSince"].is_i64());
    // Nothing runs while paused, however long.
    h.fake().clear_requests();
    h.runner().advance(DAY_MS).await.unwrap();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.sent, 0);
    assert!(h.fake().requests().is_empty());
    // A new token resumes them all.
    h.connect("EAAB-sample-agency-token-0002").await;
    let report = h.runner().tick().await.unwrap();
    assert_eq!(report.dispatched.sent, 4);
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(
        (link.sync_state.as_str(), link.last_error.clone()),
        ("live", None)
    );
}

#[tokio::test]
async fn a_range_with_too_much_data_is_halved_and_a_day_over_the_cap_is_truncated() {
    let h = Harness::start().await;
    h.link_agency().await;
    // About 19 rows an account-day: 200 rows is about 10 days.
    h.fake().set_knobs(Knobs {
        row_cap: Some(200),
        ..Knobs::default()
    });
    h.runner().tick().await.unwrap();
    let ranges = h.insights_ranges(LOJA_PRINCIPAL);
    assert_eq!(
        ranges[0],
        ("2026-04-02".to_owned(), "2026-05-01".to_owned())
    );
    assert_eq!(
        ranges[1],
        ("2026-04-02".to_owned(), "2026-04-16".to_owned())
    );
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.backfill_from.as_deref(), Some("2026-05-02"));
    assert_eq!(link.last_error, None);
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        rows.len() > 400,
        "every day of the block was read: {}",
        rows.len()
    );

    // A cap below one day's rows: down to single days, kept what came, flagged.
    h.fake().set_knobs(Knobs {
        row_cap: Some(5),
        ..Knobs::default()
    });
    h.runner().advance(2_000).await.unwrap();
    h.runner().tick().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_TRUNCATED: "),
        "{:?}",
        link.last_error
    );
    assert!(
        h.insights_ranges(LOJA_PRINCIPAL)
            .iter()
            .any(|(s, u)| s == u),
        "single days were asked"
    );
}

#[tokio::test]
async fn a_run_that_lost_its_lease_writes_nothing() {
    let h = Harness::start().await;
    h.link_agency().await;
    // Run A is leased and its message sent; the worker never gets to it.
    assert_eq!(h.runner().dispatch().await.unwrap().sent, 4);
    let run_a = h.link("loja-x", LOJA_PRINCIPAL).await.run_id.unwrap();
    // The lease runs out: run B takes the account, and says so.
    h.runner().advance(16 * MINUTE_MS).await.unwrap();
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

#[tokio::test]
async fn a_poison_message_reaches_the_dead_letter_queue_after_the_receive_limit() {
    let h = Harness::start().await;
    let queue = h.runner().stack.queue("SyncQueue").unwrap().clone();
    h.store()
        .queues()
        .send_batch(&queue.url, &["{not a sync message".to_owned()])
        .await
        .unwrap();
    let mut failures = 0;
    for _ in 0..8 {
        failures += h.runner().drain().await.unwrap().failed;
        // The queue's visibility timeout passes on the runner's clock.
        h.runner()
            .advance(queue.visibility_timeout * 1_000 + 1)
            .await
            .unwrap();
    }
    assert_eq!(failures, 5, "maxReceiveCount deliveries, then redrive");
    let dlq = queue.dead_letter_url.unwrap();
    let out = h
        .store()
        .sqs
        .receive_message()
        .queue_url(&dlq)
        .max_number_of_messages(10)
        .send()
        .await
        .unwrap();
    let bodies: Vec<String> = out
        .messages
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.body)
        .collect();
    assert_eq!(bodies, vec!["{not a sync message".to_owned()]);
}

#[tokio::test]
async fn a_permission_error_waits_six_hours_and_shows_as_an_error() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.fake().set_knobs(Knobs {
        deny_permission: true,
        ..Knobs::default()
    });
    h.runner().tick().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.sync_state.as_str(), "error");
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_PERMISSION_MISSING: ")
    );
    assert_eq!(link.next_sync_at, Some(h.now() + 6 * HOUR_MS));
}

#[tokio::test]
async fn a_sealing_key_kms_refuses_only_delays_the_sync() {
    let h = Harness::start().await;
    h.link_agency().await;
    // KMS unreachable: the same clients, KMS pointed at a closed port.
    let mut store = h.store().clone();
    let kms_config = aws_sdk_kms::config::Builder::from(
        &adtrail_local::moto::sdk_config("http://127.0.0.1:9").await,
    )
    .retry_config(aws_config::retry::RetryConfig::disabled())
    .build();
    store.kms = aws_sdk_kms::Client::from_conf(kms_config);
    let worker = adtrail_sync_worker::Worker {
        store: store.clone(),
        ..h.runner().worker.clone()
    };
    h.runner().dispatch().await.unwrap();
    let run_id = h.link("loja-x", LOJA_PRINCIPAL).await.run_id.unwrap();
    let message = SyncMessage {
        site_id: "loja-x".into(),
        ad_account_id: LOJA_PRINCIPAL.into(),
        run_id,
    };
    worker
        .run(
            &message,
            std::time::Instant::now() + std::time::Duration::from_secs(60),
        )
        .await
        .unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("SEALING_KEY_UNAVAILABLE: "),
        "{:?}",
        link.last_error
    );
    assert_eq!(link.sync_state.as_str(), "backfill");
    assert_eq!(link.next_sync_at, Some(h.now() + 15 * MINUTE_MS));
    assert!(
        h.fake()
            .requests()
            .iter()
            .all(|r| !r.path.contains("/insights")),
        "Meta was not called"
    );
    // Connecting needs the key too: 503, nothing stored.
    let api = adtrail_api::Api {
        store,
        ..h.runner().api.clone()
    };
    let (status, _) = call_handler(
        &api,
        "PUT",
        "/v1/meta/connections/other",
        br#"{"accessToken":"EAAB-other-token"}"#,
    )
    .await;
    assert_eq!(status, 503);
    assert!(
        h.store()
            .connections()
            .get_connection("other")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_fake_meta_is_as_strict_as_meta() {
    let h = Harness::start().await;
    let base = h.fake().url();
    let http = reqwest::Client::new();
    let range =
        url::form_urlencoded::byte_serialize(br#"{"since":"2026-06-01","until":"2026-06-02"}"#)
            .collect::<String>();
    let good = format!(
        "/v25.0/{LOJA_PRINCIPAL}/insights?level=ad&time_increment=1&fields=ad_id,spend&time_range={range}"
    );
    let cases = [
        (good.replace("/v25.0", ""), Some(TOKEN), 2635),
        (format!("{good}&access_token={TOKEN}"), None, 100),
        (good.clone(), None, 2500),
        (
            good.replace("level=ad", "level=adset&x=1")
                .replace("&x=1", ""),
            Some(TOKEN),
            100,
        ),
        (
            good.replace("fields=ad_id,spend", "fields=ad_id,secret"),
            Some(TOKEN),
            100,
        ),
        (good.replace(&range, "2026-06-01"), Some(TOKEN), 100),
        (good.clone(), Some("EAAB-invalid-token"), 190),
    ];
    for (path, token, code) in cases {
        let mut req = http.get(format!("{base}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let body: serde_json::Value = req.send().await.unwrap().json().await.unwrap();
        assert_eq!(body["error"]["code"].as_i64(), Some(code), "{path}: {body}");
    }
    let ok: serde_json::Value = http
        .get(format!("{base}{good}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(ok["data"].as_array().unwrap().len() > 10);
}

#[tokio::test]
async fn a_run_near_its_deadline_starts_no_meta_read_and_says_so() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.runner().dispatch().await.unwrap();
    let run_id = h.link("loja-x", LOJA_PRINCIPAL).await.run_id.unwrap();
    let message = SyncMessage {
        site_id: "loja-x".into(),
        ad_account_id: LOJA_PRINCIPAL.into(),
        run_id,
    };
    h.fake().clear_requests();
    // The deadline margin has already passed.
    h.runner()
        .worker
        .run(&message, std::time::Instant::now())
        .await
        .unwrap();
    assert!(h.insights_ranges(LOJA_PRINCIPAL).is_empty());
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("RUN_TIMEOUT: "),
        "{:?}",
        link.last_error
    );
    assert_eq!(link.run_id, None, "the lease is released");
    assert_eq!(
        link.backfill_from, None,
        "the backfill is still owed from its start"
    );
    assert_eq!(link.next_sync_at, Some(h.now() + 15 * MINUTE_MS));
}
