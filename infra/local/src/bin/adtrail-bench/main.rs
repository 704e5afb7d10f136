//! `make bench`: the figures, measured in one run on the local stack.
//!
//! - a 90-day backfill of the sample agency (4 accounts): DynamoDB requests
//!   (counted by an SDK interceptor on every client) and Meta requests
//!   (counted from the fake's log) per 1,000 ad-day rows stored, and wall time;
//! - side by side, a resync of the same days where nothing changed (the
//!   weekly 28-day run): what skipping unchanged rows saves;
//! - peak memory (VmHWM) of the process that ran the workers;
//! - the release arm64 binary of each function, if `make build-lambdas` made it.
//!
//! - the Conversions API sender, side by side in one run: 1,000
//!   conversions sent batched (up to 1,000 events a request) against one
//!   event a request, the fake answering each request at 100 ms
//!   (`BENCH_CAPI_LATENCY_MS`): conversions per second through the queue,
//!   Meta and DynamoDB requests per 1,000 conversions.
//!
//! - the two reports over the backfilled 90 days with 120 leads recorded
//!   (half from ads): DynamoDB requests and wall time of one leads report
//!   (both sites, campaign tree, presigned thumbnails) and one daily report
//!   (92 days), side by side;
//! - a site's spend as a report reads it, 20 accounts over 30 days: one
//!   account after another against the site's links read in one query
//!   (`BENCH_ONLY=sums`).
//!
//! The fake answers with a realistic latency (`BENCH_LATENCY_MS`, default
//! 40 ms). Runs are repeated (`BENCH_RUNS`, default 3) and medians reported.

mod capi;
mod cost;
mod platforms;
mod process;
mod scale;
mod site_sums;
mod sync;

use capi::capi_bench;
use process::{init_times, vm_hwm_kib};
use sync::{Figures, ReportFigures, one_run};

type Error = Box<dyn std::error::Error + Send + Sync>;

pub(crate) const T0: i64 = 1_782_820_800_000; // 2026-06-30T12:00:00Z
pub(crate) const ACCOUNTS: [(&str, &str); 4] = [
    ("loja-x", "act_1029384756"),
    ("loja-x", "act_1029384757"),
    ("pet-mania", "act_2038475610"),
    ("pet-mania", "act_2038475611"),
];

/// The `PUT`s that make Loja X a site whose pixel sends a `Lead` for
/// each new lead: the site, the agency's connection, the pixel, the map.
pub(crate) fn pixel_site() -> [(&'static str, serde_json::Value); 4] {
    use serde_json::json;
    [
        (
            "/v1/sites/loja-x",
            json!({"name": "Loja X", "currency": "BRL", "country": "BR"}),
        ),
        (
            "/v1/meta/connections/agency",
            json!({"accessToken": "EAAB-sample-agency-token-0001"}),
        ),
        (
            "/v1/sites/loja-x/pixel",
            json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"}),
        ),
        (
            "/v1/sites/loja-x/event-map",
            json!({"columns": {}, "sendLeadEvent": true}),
        ),
    ]
}

/// A stack whose sender puts at most `per_request` events in a platform
/// request (`CAPI_EVENTS_PER_REQUEST`, which the runner reads as it
/// starts). The variable goes again once it is read: a stack started later
/// (the cost bench's) sends as many a request as a deployed one.
pub(crate) async fn start_sending(
    per_request: usize,
    clock: adtrail_domain::time::VirtualClock,
    prefix: &str,
) -> Result<adtrail_local::app::App, Error> {
    // SAFETY: the bench starts one stack at a time, and nothing else reads
    // the environment meanwhile.
    unsafe { std::env::set_var("CAPI_EVENTS_PER_REQUEST", per_request.to_string()) };
    let app =
        adtrail_local::app::start("127.0.0.1:0".parse()?, std::sync::Arc::new(clock), prefix).await;
    // SAFETY: as above.
    unsafe { std::env::remove_var("CAPI_EVENTS_PER_REQUEST") };
    app
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The sync path: a backfill and a weekly resync of the sample agency,
/// and the two reports over what they stored.
async fn sync_bench(runs: usize, latency: u64) -> Result<(), Error> {
    let mut results = vec![];
    for _ in 0..runs.max(1) {
        results.push(one_run(latency).await?);
    }
    let per_k = |f: &Figures, n: u64| n as f64 * 1_000.0 / f.rows.max(1) as f64;
    let report = |label: &str, pick: fn(&(Figures, Figures, ReportFigures)) -> Figures| {
        let figs: Vec<Figures> = results.iter().map(pick).collect();
        let rows = figs[0].rows;
        let ddb = median(figs.iter().map(|f| per_k(f, f.ddb)).collect());
        let meta = median(figs.iter().map(|f| per_k(f, f.meta)).collect());
        let cdn = median(figs.iter().map(|f| per_k(f, f.cdn)).collect());
        let ms = median(figs.iter().map(|f| f.millis as f64).collect());
        let total = median(figs.iter().map(|f| f.ddb as f64).collect());
        println!(
            "{label:<32} rows {rows:>5} | dynamodb requests {total:>4.0} | per 1k rows: dynamodb {ddb:>6.1}, graph {meta:>5.1}, thumbnails {cdn:>5.1} | wall ms {ms:>6.0} (median of {runs})"
        );
        (ddb, meta)
    };
    println!(
        "adtrail bench: sample agency, 4 ad accounts, fake Meta at {latency} ms a call, moto for AWS"
    );
    let (b_ddb, _) = report("90-day backfill", |r| r.0);
    let (r_ddb, _) = report("weekly 28-day resync, no change", |r| r.1);
    println!(
        "ratio: a resync of unchanged days costs {:.2}x the DynamoDB requests per row of a backfill",
        r_ddb / b_ddb
    );
    let reports: Vec<ReportFigures> = results.iter().map(|r| r.2).collect();
    let med = |f: fn(&ReportFigures) -> f64| median(reports.iter().map(f).collect());
    println!(
        "leads report, 2 sites, 90 days   {:.0} ad rows | dynamodb requests {:>4.0} | wall ms {:>6.0} (median of {runs}); of which reading the per-ad rows alone {:.0} ms, presigning the thumbnails {:.0} ms",
        med(|r| r.leads_ads as f64),
        med(|r| r.leads_ddb as f64),
        med(|r| r.leads_ms as f64),
        med(|r| r.rows_ms as f64),
        med(|r| r.presign_ms as f64)
    );
    println!(
        "daily report, 2 sites, 92 days            | dynamodb requests {:>4.0} | wall ms {:>6.0} (median of {runs})",
        med(|r| r.daily_ddb as f64),
        med(|r| r.daily_ms as f64)
    );
    Ok(())
}

/// Each function's release arm64 binary, as `make build-lambdas` made it.
fn binary_sizes() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    for bin in process::FUNCTIONS.into_iter().chain([process::HELLO]) {
        let path = target.join("lambda").join(bin).join("bootstrap");
        match std::fs::metadata(&path) {
            Ok(m) => println!(
                "release arm64 binary {bin:<22} {:>6.2} MiB",
                m.len() as f64 / 1_048_576.0
            ),
            Err(_) => {
                println!("release arm64 binary {bin:<22} not built (run `make build-lambdas`)")
            }
        }
    }
}

/// A function's name as SAM makes it (`<stack>-<logical id>-<suffix>`),
/// on each JSON line.
const FUNCTION_NAME: &str = "adtrail-loja-x-SyncWorkerFunction-AbCdEfGh1234";

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The functions' log lines in Lambda's JSON format and their metric
    // documents, counted and dropped: the cost bench prices their bytes,
    // and the metrics the documents name.
    adtrail_store::logging::init_as(
        || adtrail_local::runner::CountingSink,
        adtrail_store::logging::Format::Json {
            function: Some(FUNCTION_NAME.to_owned()),
        },
    );
    adtrail_store::telemetry::init();
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let latency: u64 = std::env::var("BENCH_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    match std::env::var("BENCH_ONLY").as_deref() {
        Ok("platforms") => return platforms::platforms_bench().await,
        Ok("cost") => return cost::cost_bench(latency).await,
        Ok("accounts") => return cost::accounts_bench(latency).await,
        Ok("scale") => return scale::scale_bench().await,
        Ok("latency") => return scale::lead_to_meta().await,
        Ok("sums") => return site_sums::site_sums_bench().await,
        Ok("init") => {
            init_times(runs).await;
            return Ok(());
        }
        _ => {}
    }
    sync_bench(runs, latency).await?;
    capi_bench(runs).await?;
    platforms::platforms_bench().await?;
    match vm_hwm_kib() {
        Some(kib) => println!(
            "peak memory (VmHWM) of the process running the workers, runner and fake Meta: {:.1} MiB",
            kib as f64 / 1024.0
        ),
        None => println!("peak memory: /proc/self/status not readable"),
    }
    init_times(runs).await;
    binary_sizes();
    cost::cost_bench(latency).await?;
    scale::scale_bench().await?;
    site_sums::site_sums_bench().await?;
    Ok(())
}
