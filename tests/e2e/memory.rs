//! The sync worker's memory, measured on its real `main` as Lambda runs
//! it: the template gives it the stack's global 256 MB, on the bound that a
//! run holds one insights call's rows at a time. Two runs of one batch read
//! their largest part at once (about 19,000 ad-days each, every name at the
//! 400 characters adtrail keeps, two bytes a character), and the process's
//! peak resident memory must stay well inside the function's size: a batch
//! holds up to five runs (the mapping's `BatchSize`), so two parts must
//! take well under two fifths of it. Before the Graph client kept each
//! ad's names once a call, these two parts took 158 MiB.

use adtrail_domain::time::{Clock, SystemClock};
use adtrail_tests::runtime::{Function, binary};
use adtrail_tests::*;

use crate::runtime::sqs_event;

/// The function's memory size in the template, in MiB.
const TEMPLATE_MB: u64 = 256;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_reading_their_largest_part_stay_well_inside_256_mb() {
    // The main runs on the wall clock: so does the stack here.
    let h = Harness::start_at(SystemClock.now_ms()).await;
    for (site, currency) in [("loja-x", "BRL"), ("pet-mania", "USD")] {
        h.put_site(site, currency).await;
    }
    h.connect(TOKEN).await;
    h.link_account("loja-x", LOJA_PRINCIPAL, "agency").await;
    h.link_account("pet-mania", PET_EAST, "agency").await;
    // 800 more ads an account: a 30-day block is about 19,000 rows, just
    // under one call's 40 pages of 500.
    h.fake().tune(|k| k.wide_ads = 800);
    let worker = Function::start(
        binary("adtrail-sync-worker"),
        &adtrail_tests::runtime::stack_env(&h),
    )
    .await;
    assert_eq!(h.runner().dispatch().await.unwrap().sent, 2);
    let event = sqs_event(&h, &h.store().names.sync_queue_url)
        .await
        .expect("the two runs' messages");
    assert_eq!(event["Records"].as_array().map(Vec::len), Some(2));
    // Two parts of 40 pages each, 38,000 rows written to the emulator
    // under the run's injected DynamoDB faults: over a minute when the
    // whole suite shares the machine, well inside the worker's deadline.
    let answer = worker
        .invoke_within(event, std::time::Duration::from_secs(600))
        .await
        .expect("the batch ran");
    assert_eq!(answer["batchItemFailures"], serde_json::json!([]));
    let peak = worker.peak_memory_kib().expect("the process's status");
    // Both runs read a whole part and saved it.
    for (site, account) in [("loja-x", LOJA_PRINCIPAL), ("pet-mania", PET_EAST)] {
        let link = h.link(site, account).await;
        assert_eq!(
            (link.failures, link.last_error.as_deref()),
            (0, None),
            "{site} {account}: the run failed"
        );
        let rows = h.all_rows(site, account).await;
        assert!(rows.len() > 18_000, "{site} {account}: {} rows", rows.len());
        h.assert_sums_match_rows(site, account).await;
    }
    println!(
        "sync worker peak memory: {} MiB for two parts at once (the template gives {TEMPLATE_MB} MiB)",
        peak / 1024
    );
    assert!(
        peak < TEMPLATE_MB * 1024 / 4,
        "peak {} MiB, over a quarter of {TEMPLATE_MB} MiB",
        peak / 1024
    );
    worker.stop().await;
}
