//! Meta and AWS failing: throttles, back-off, refused tokens, permissions,
//! the sealing key, poison messages, the deadline.

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use adtrail_fake_meta::{Knobs, Throttle};
use adtrail_store::queue::SyncMessage;
use adtrail_tests::*;
use serde_json::json;

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
    store.kms = aws_sdk_kms::Client::from_conf(kms_config).into();
    // A cold process: no token opened yet.
    let worker = adtrail_sync_worker::Worker {
        store: store.clone(),
        tokens: Default::default(),
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

/// A huge account: Meta asks for less on every range over three days and
/// answers slowly, so no run reads a 30-day block before its deadline. What
/// each run read is kept, and the next run goes on from there: the 90-day
/// backfill completes over several runs instead of timing out forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_account_completes_its_backfill_over_several_runs() {
    let h = Harness::start().await;
    h.link_agency().await;
    // About 19 rows an account-day: over 3 days of rows is "too much data".
    h.fake().set_knobs(Knobs {
        row_cap: Some(60),
        latency_ms: 60,
        ..Knobs::default()
    });
    let mut runs = 0;
    for _ in 0..40 {
        h.runner().dispatch().await.unwrap();
        let link = h.link("loja-x", LOJA_PRINCIPAL).await;
        if let Some(run_id) = link.run_id.clone() {
            runs += 1;
            let message = SyncMessage {
                site_id: "loja-x".into(),
                ad_account_id: LOJA_PRINCIPAL.into(),
                run_id,
            };
            h.runner()
                .worker
                .run(
                    &message,
                    std::time::Instant::now() + std::time::Duration::from_millis(1_500),
                )
                .await
                .unwrap();
        }
        if h.link("loja-x", LOJA_PRINCIPAL).await.sync_state.as_str() == "live" {
            break;
        }
        h.runner().advance(16 * MINUTE_MS).await.unwrap();
    }
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.sync_state.as_str(), "live", "{link:?}");
    assert!(runs > 1, "it took several runs ({runs})");
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

/// A warm worker opens an owner's token with KMS once a quarter hour: the
/// agency's four accounts, and a sync asked for minutes later, take one
/// KMS request; a run a live interval later opens it again.
#[tokio::test]
async fn a_warm_worker_opens_an_owners_token_once_a_quarter_hour() {
    let h = Harness::start().await;
    h.link_agency().await;
    h.at_first_live_sync().await;
    let counter = &h.runner().stack.store.counter;
    counter.reset();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 4);
    assert_eq!(counter.get("kms"), 1, "four runs, one owner");
    h.runner().advance(10 * MINUTE_MS).await.unwrap();
    h.store()
        .links()
        .request_sync("pet-mania", PET_EAST, h.now())
        .await
        .unwrap();
    counter.reset();
    assert_eq!(h.runner().tick().await.unwrap().dispatched.leased, 1);
    assert_eq!(counter.get("kms"), 0, "opened ten minutes ago");
    h.runner().advance(40 * MINUTE_MS).await.unwrap();
    counter.reset();
    assert!(h.runner().tick().await.unwrap().dispatched.leased >= 3);
    assert_eq!(counter.get("kms"), 1, "opened again after a quarter hour");
}
