//! The Conversions API sender side by side: batched against one event a
//! request, through the queue, with the fake answering at a set latency.

use std::time::Instant;

use adtrail_domain::time::VirtualClock;
use serde_json::json;

use crate::{Error, T0, median};

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
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bcapi-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let app = crate::start_sending(per_request, clock.clone(), &prefix).await?;
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
pub(crate) async fn capi_bench(runs: usize) -> Result<(), Error> {
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
