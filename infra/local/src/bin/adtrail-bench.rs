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
//!   (92 days), side by side.
//!
//! The fake answers with a realistic latency (`BENCH_LATENCY_MS`, default
//! 40 ms). Runs are repeated (`BENCH_RUNS`, default 3) and medians reported.

use std::sync::Arc;
use std::time::Instant;

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS, VirtualClock};
use adtrail_fake_meta::Knobs;
use adtrail_local::app::start;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

const T0: i64 = 1_782_820_800_000; // 2026-06-30T12:00:00Z
const ACCOUNTS: [(&str, &str); 4] = [
    ("loja-x", "act_1029384756"),
    ("loja-x", "act_1029384757"),
    ("pet-mania", "act_2038475610"),
    ("pet-mania", "act_2038475611"),
];

#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    rows: u64,
    ddb: u64,
    meta: u64,
    cdn: u64,
    millis: u128,
}

/// What one read of each report cost.
#[derive(Debug, Clone, Copy, Default)]
struct ReportFigures {
    leads_ddb: u64,
    leads_ms: u128,
    leads_ads: u64,
    /// Of the leads report's time: reading the per-ad rows alone, and
    /// presigning one URL per ad row.
    rows_ms: u128,
    presign_ms: u128,
    daily_ddb: u64,
    daily_ms: u128,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn one_run(latency_ms: u64) -> Result<(Figures, Figures, ReportFigures), Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bench-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let app = start("127.0.0.1:0".parse()?, Arc::new(clock.clone()), &prefix).await?;
    let fake = app.fake.clone().ok_or("the bench needs the fake Meta")?;
    let http = reqwest::Client::new();
    let token = app.host_token();
    let call = |method: reqwest::Method, path: String, body: serde_json::Value| {
        http.request(method, format!("{}{path}", app.api_url))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    for (site, currency) in [("loja-x", "BRL"), ("pet-mania", "USD")] {
        call(
            reqwest::Method::PUT,
            format!("/v1/sites/{site}"),
            json!({"name": site, "currency": currency}),
        )
        .await?
        .error_for_status()?;
    }
    call(
        reqwest::Method::PUT,
        "/v1/meta/connections/agency".into(),
        json!({"accessToken": "bench-token"}),
    )
    .await?
    .error_for_status()?;
    for (site, account) in ACCOUNTS {
        call(
            reqwest::Method::PUT,
            format!("/v1/sites/{site}/ad-accounts/{account}"),
            json!({"ownerKey": "agency"}),
        )
        .await?
        .error_for_status()?;
    }
    fake.set_knobs(Knobs {
        latency_ms,
        ..Knobs::default()
    });
    let runner = app.runner();
    let store = &runner.stack.store;

    // The backfill.
    store.counter.reset();
    fake.clear_requests();
    let started = Instant::now();
    for _ in 0..6 {
        runner.tick().await?;
        runner.advance(2_000).await?;
    }
    let backfill_ms = started.elapsed().as_millis();
    let mut rows = 0;
    for (site, account) in ACCOUNTS {
        rows += store
            .spend()
            .spend_rows(site, account, 0, i64::MAX / 2, usize::MAX)
            .await?
            .0
            .len() as u64;
    }
    let (meta, cdn) = graph_and_cdn(&fake);
    let backfill = Figures {
        rows,
        ddb: store.counter.get("dynamodb"),
        meta,
        cdn,
        millis: backfill_ms,
    };

    // The reports, over what the backfill stored and 120 leads.
    let now = runner.now();
    let ads: Vec<String> = adtrail_fake_meta::sample_accounts()
        .into_iter()
        .filter(|a| a.currency == "BRL")
        .flat_map(|a| a.ads.into_iter().map(|ad| ad.id))
        .collect();
    for i in 0..120i64 {
        let paid = i % 2 == 0;
        let mut lead = json!({
            "leadKey": format!("lead-{i}"),
            "changeId": format!("lead-{i}-new"),
            "occurredAt": now - (i % 60) * DAY_MS,
            "origin": if paid { "ctwa_ad" } else { "organic" },
        });
        if paid {
            lead["adId"] = json!(ads[i as usize % ads.len()]);
        }
        call(reqwest::Method::POST, "/v1/sites/loja-x/leads".into(), lead)
            .await?
            .error_for_status()?;
    }
    let today = now - now.rem_euclid(DAY_MS);
    let read = |path: String| {
        let req = http
            .get(format!("{}{path}", app.api_url))
            .bearer_auth(&token);
        async move {
            store.counter.reset();
            let started = Instant::now();
            let body: serde_json::Value = req.send().await?.error_for_status()?.json().await?;
            Ok::<_, Error>((
                store.counter.get("dynamodb"),
                started.elapsed().as_millis(),
                body,
            ))
        }
    };
    let (leads_ddb, leads_ms, body) = read(format!(
        "/v1/reports/leads?siteIds=loja-x,pet-mania&from={}&to={today}",
        today - 89 * DAY_MS
    ))
    .await?;
    let leads_ads = body["campaigns"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["adsets"].as_array().cloned().unwrap_or_default())
        .map(|s| s["ads"].as_array().map_or(0, Vec::len) as u64)
        .sum();
    let (daily_ddb, daily_ms, _) = read(format!(
        "/v1/reports/daily?siteIds=loja-x,pet-mania&from={}&to={today}",
        today - 91 * DAY_MS
    ))
    .await?;
    let started = Instant::now();
    for (site, account) in ACCOUNTS {
        store
            .spend()
            .spend_rows(site, account, today - 89 * DAY_MS, today, 12_000)
            .await?;
    }
    let rows_ms = started.elapsed().as_millis();
    let key = adtrail_store::blobs::thumbnail_key("loja-x", &ads[0]);
    let started = Instant::now();
    for _ in 0..leads_ads {
        store
            .blobs()
            .thumbnail_url(&key, std::time::Duration::from_secs(900))
            .await?;
    }
    let presign_ms = started.elapsed().as_millis();
    let reports = ReportFigures {
        leads_ddb,
        leads_ms,
        leads_ads,
        rows_ms,
        presign_ms,
        daily_ddb,
        daily_ms,
    };

    // The weekly resync, a week later, when Meta's figures did not change.
    runner
        .set_clock(T0 + 7 * DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await?;
    store.counter.reset();
    fake.clear_requests();
    let started = Instant::now();
    runner.tick().await?;
    let resync_ms = started.elapsed().as_millis();
    // Rows covered: 28 days of the agency, as stored.
    let mut covered = 0;
    for (site, account) in ACCOUNTS {
        let last = runner.now() - runner.now().rem_euclid(DAY_MS);
        covered += store
            .spend()
            .spend_rows(site, account, last - 27 * DAY_MS, last, usize::MAX)
            .await?
            .0
            .len() as u64;
    }
    let (meta, cdn) = graph_and_cdn(&fake);
    let resync = Figures {
        rows: covered,
        ddb: store.counter.get("dynamodb"),
        meta,
        cdn,
        millis: resync_ms,
    };
    Ok((backfill, resync, reports))
}

/// Graph API calls and CDN (thumbnail) fetches the fake served.
fn graph_and_cdn(fake: &adtrail_fake_meta::FakeMeta) -> (u64, u64) {
    let requests = fake.requests();
    let cdn = requests
        .iter()
        .filter(|r| r.path.starts_with("/thumbs/"))
        .count() as u64;
    (requests.len() as u64 - cdn, cdn)
}

/// Init time of each function's release binary: from spawning it to its
/// first call to the Lambda runtime API (`/runtime/invocation/next`), served
/// here by a listener standing in for Lambda. x86_64 binaries of this
/// machine, so a proxy for Lambda's arm64 init, not the figure itself.
async fn init_times(runs: usize) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    for bin in [
        "adtrail-api",
        "adtrail-dispatcher",
        "adtrail-sync-worker",
        "adtrail-sweeper",
        "adtrail-capi-sender",
    ] {
        let path = target.join("release").join(bin);
        if !path.exists() {
            println!("init time {bin:<22} not built (cargo build --release --bin {bin})");
            continue;
        }
        let mut samples = vec![];
        for _ in 0..runs {
            let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
                continue;
            };
            let Ok(addr) = listener.local_addr() else {
                continue;
            };
            let started = Instant::now();
            let child = tokio::process::Command::new(&path)
                .env_clear()
                .env("AWS_LAMBDA_RUNTIME_API", addr.to_string())
                .env("AWS_LAMBDA_FUNCTION_NAME", bin)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("AWS_LC_SYS_NO_JITTER_ENTROPY", "1")
                .env("TABLE_NAME", "t")
                .env("SYNC_QUEUE_URL", "http://127.0.0.1:9/q")
                .env("SEND_QUEUE_URL", "http://127.0.0.1:9/s")
                .env("BUS_NAME", "b")
                .env("KEY_ID", "k")
                .env("THUMBNAIL_BUCKET", "b")
                .env("RUST_LOG", "error")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn();
            let Ok(mut child) = child else { continue };
            if let Ok(Ok((_stream, _))) =
                tokio::time::timeout(std::time::Duration::from_secs(10), listener.accept()).await
            {
                samples.push(started.elapsed().as_secs_f64() * 1_000.0);
            }
            let _ = child.kill().await;
        }
        if samples.is_empty() {
            println!("init time {bin:<22} no call to the runtime API within 10 s");
        } else {
            println!(
                "init time {bin:<22} {:>6.1} ms to the first runtime API call (median of {}, x86_64 release)",
                median(samples.clone()),
                samples.len()
            );
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct CapiFigures {
    conversions: u64,
    sent: u64,
    meta: u64,
    ddb: u64,
    millis: f64,
}

/// One drain of `n` queued conversions with `per_request` events a request.
async fn capi_run(per_request: usize, n: usize, latency_ms: u64) -> Result<CapiFigures, Error> {
    // SAFETY: read once by the runner `start` builds below; the bench runs
    // one stack at a time.
    unsafe { std::env::set_var("CAPI_EVENTS_PER_REQUEST", per_request.to_string()) };
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bcapi-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let app = start("127.0.0.1:0".parse()?, Arc::new(clock.clone()), &prefix).await?;
    let fake = app.fake.clone().ok_or("the bench needs the fake Meta")?;
    let http = reqwest::Client::new();
    let token = app.host_token();
    let put = |path: &str, body: serde_json::Value| {
        http.put(format!("{}{path}", app.api_url))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    put(
        "/v1/sites/loja-x",
        json!({"name": "Loja X", "currency": "BRL", "country": "BR"}),
    )
    .await?
    .error_for_status()?;
    put(
        "/v1/meta/connections/agency",
        json!({"accessToken": "EAAB-sample-agency-token-0001"}),
    )
    .await?
    .error_for_status()?;
    put(
        "/v1/sites/loja-x/pixel",
        json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"}),
    )
    .await?
    .error_for_status()?;
    let store = &app.runner().stack.store;
    let mut messages = vec![];
    for i in 0..n.div_ceil(4) {
        let w = adtrail_local::sample::lead_write("loja-x", "BRL", i, (n - i * 4).min(4), T0);
        store.leads().write_lead_change(&w).await?;
        messages.extend(adtrail_local::sample::messages(&w));
    }
    store.queues().enqueue_sends(&messages).await?;
    fake.tune(|k| k.latency_ms = latency_ms);
    fake.clear_requests();
    store.counter.reset();
    let started = Instant::now();
    app.runner().drain().await?;
    let millis = started.elapsed().as_secs_f64() * 1_000.0;
    let meta = fake
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events"))
        .count() as u64;
    Ok(CapiFigures {
        conversions: n as u64,
        sent: fake.accepted_events().len() as u64,
        meta,
        ddb: store.counter.get("dynamodb"),
        millis,
    })
}

/// The sender batched against one event a request, in one run.
async fn capi_bench(runs: usize) -> Result<(), Error> {
    let latency: u64 = std::env::var("BENCH_CAPI_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let n = 1_000;
    let mut rates = vec![];
    for (label, per_request) in [
        ("batched (up to 1,000 a request)", 1_000),
        ("one event a request", 1),
    ] {
        let mut figs = vec![];
        for _ in 0..runs.max(1) {
            figs.push(capi_run(per_request, n, latency).await?);
        }
        let sent = figs[0].sent;
        let per_k = |v: u64, f: &CapiFigures| v as f64 * 1_000.0 / f.conversions.max(1) as f64;
        let meta = median(figs.iter().map(|f| per_k(f.meta, f)).collect());
        let ddb = median(figs.iter().map(|f| per_k(f.ddb, f)).collect());
        let rate = median(
            figs.iter()
                .map(|f| f.conversions as f64 * 1_000.0 / f.millis)
                .collect(),
        );
        println!(
            "capi {label:<32} {n} conversions, {sent} sent | per 1k: meta requests {meta:>7.1}, dynamodb requests {ddb:>7.1} | {rate:>7.1} conversions/s (median of {runs}, fake Meta at {latency} ms)"
        );
        rates.push((rate, meta));
    }
    println!(
        "ratio: batching sends {:.1}x the conversions per second with {:.0}x fewer requests to Meta",
        rates[0].0 / rates[1].0,
        rates[1].1 / rates[0].1.max(0.001)
    );
    Ok(())
}

fn vm_hwm_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let latency: u64 = std::env::var("BENCH_LATENCY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
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
    capi_bench(runs).await?;
    match vm_hwm_kib() {
        Some(kib) => println!(
            "peak memory (VmHWM) of the process running the workers, runner and fake Meta: {:.1} MiB",
            kib as f64 / 1024.0
        ),
        None => println!("peak memory: /proc/self/status not readable"),
    }
    init_times(runs.max(5)).await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    for bin in [
        "adtrail-api",
        "adtrail-dispatcher",
        "adtrail-sync-worker",
        "adtrail-sweeper",
        "adtrail-capi-sender",
    ] {
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
    Ok(())
}
