//! What running adtrail costs, computed from what the bench counted: the
//! Lambda GB-seconds of the measured handler times at the template's
//! memory sizes, the requests to SQS, KMS, EventBridge, Secrets Manager, S3
//! and API Gateway, and DynamoDB's request units from item sizes (with a
//! transaction's doubling, and each index entry written), times AWS's list prices for us-east-1 kept in
//! `infra/prices/us-east-1.json` with their date and sources.
//!
//! Four figures: a million conversions posted by a storefront (one sale a
//! request, for the pixel, sent batched), a million new leads recorded
//! through the API that each queue one event for the pixel (the lead's own
//! writes with it), a month of 1,000 linked ad accounts (a day of live syncs of the sample
//! agency, scaled), and a month of an idle stack (the schedules' ticks,
//! the queues' pollers, and what the stack keeps: keys, the app's secret,
//! the dashboard, alarms). Under each figure, its DynamoDB units by what
//! spent them.

use std::sync::Arc;

use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::{DAY_MS, MINUTE_MS, VirtualClock};
use adtrail_local::app::{App, Settings, start_with};
use serde_json::json;

use crate::{Error, T0};

mod usage;

use usage::{LOG_BYTES_PER_API_REQUEST, Prices, Usage, prices};

fn line(label: &str, usage: &Usage, p: &Prices, goal: Option<f64>) {
    let parts = usage.cost(p);
    let total: f64 = parts.iter().map(|(_, c)| c).sum();
    let detail: Vec<String> = parts
        .iter()
        .map(|(name, c)| format!("{name} ${c:.3}"))
        .collect();
    let verdict = goal.map_or(String::new(), |g| {
        format!(
            " | goal <= ${g:.2}: {}",
            if total <= g { "met" } else { "NOT met" }
        )
    });
    println!(
        "cost {label:<38} ${total:>7.3} ({}; {:.0} WRU, {:.0} RRU, {:.0} GB-s, {:.0} invocations){verdict}",
        detail.join(", "),
        usage.write_units,
        usage.read_units,
        usage.gb_seconds,
        usage.invocations,
    );
}

/// DynamoDB's units by what spent them (`TxPut conv`: a conversion row
/// put in a transaction): write units, read units, requests.
type ByLabel = std::collections::BTreeMap<String, (f64, f64, f64)>;

/// What the stack's counter booked so far, by label.
fn units_by(app: &App) -> ByLabel {
    app.runner()
        .stack
        .store
        .counter
        .units_by()
        .into_iter()
        .map(|(label, (w, r, n))| (label, (w, r, n as f64)))
        .collect()
}

/// `a` less `b` taken `times` times, label by label.
fn less(mut a: ByLabel, b: &ByLabel, times: f64) -> ByLabel {
    for (label, (w, r, n)) in b {
        let entry = a.entry(label.clone()).or_default();
        entry.0 -= w * times;
        entry.1 -= r * times;
        entry.2 -= n * times;
    }
    a
}

/// The lines under a cost figure: its DynamoDB units by label, per `per`
/// units of work, dearest first.
fn breakdown(by: ByLabel, per: f64, unit: &str, p: &Prices) -> Vec<String> {
    let dollars =
        |w: f64, r: f64| w * p.dynamodb_write_request_unit + r * p.dynamodb_read_request_unit;
    let mut rows: Vec<(String, f64, f64, f64)> = by
        .into_iter()
        .map(|(label, (w, r, n))| (label, w / per, r / per, n / per))
        .filter(|(_, w, r, _)| w + r > 1e-9)
        .collect();
    rows.sort_by(|a, b| dollars(b.1, b.2).total_cmp(&dollars(a.1, a.2)));
    rows.into_iter()
        .take(8)
        .map(|(label, w, r, n)| {
            format!("       {label:<26} {w:>6.2} WRU {r:>6.2} RRU {n:>6.2} requests {unit}")
        })
        .collect()
}

async fn stack(prefix: &str) -> Result<App, Error> {
    stack_with(prefix, Settings::default()).await
}

async fn stack_with(prefix: &str, settings: Settings) -> Result<App, Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    );
    start_with("127.0.0.1:0".parse()?, Arc::new(clock), &prefix, settings).await
}

async fn call(
    app: &App,
    method: reqwest::Method,
    path: &str,
    body: serde_json::Value,
) -> Result<(), Error> {
    reqwest::Client::new()
        .request(method, format!("{}{path}", app.api_url))
        .bearer_auth(app.host_token())
        .json(&body)
        .send()
        .await?
        .error_for_status()?;
    Ok(())
}

/// A million conversions of one kind: `n` requests made by `request(i)`,
/// each of `per_request` conversions, on a site whose pixel is live, then
/// sent, and the sweeper's look at them once late; the usage of all, times
/// a million over the conversions, and of their sending alone (the queue,
/// the sender, the rows' claims and ends, the send batches' deletes).
async fn conversions(
    n: usize,
    per_request: usize,
    request: impl Fn(usize) -> (&'static str, serde_json::Value),
) -> Result<(Usage, Usage, Vec<String>), Error> {
    use reqwest::Method;
    let app = stack("bcost").await?;
    for (path, body) in crate::pixel_site() {
        call(&app, Method::PUT, path, body).await?;
    }
    let store = &app.runner().stack.store;
    store.counter.reset();
    app.runner().handler_time.reset();
    for i in 0..n {
        let (path, body) = request(i);
        call(&app, Method::POST, path, body).await?;
    }
    let recorded = Usage::counted(&app);
    app.runner().drain().await?;
    let sent = Usage::counted(&app);
    let sent_by = units_by(&app);
    // The sweeper's look at the send batches once they are late (reading
    // their rows, deleting them), less that of a sweep finding nothing.
    let sweep = || async {
        store.counter.reset();
        app.runner().handler_time.reset();
        app.runner().sweep().await?;
        Ok::<_, Error>((Usage::counted(&app), units_by(&app)))
    };
    let (idle, idle_by) = sweep().await?;
    app.runner().advance(16 * MINUTE_MS).await?;
    let (late, late_by) = sweep().await?;
    let mut usage = sent.plus(late.minus(idle));
    let sending = usage.minus(recorded);
    usage.api = n as f64;
    usage.log_bytes += n as f64 * LOG_BYTES_PER_API_REQUEST;
    let k = 1e6 / (n * per_request) as f64;
    let by = breakdown(
        less(less(sent_by, &late_by, -1.0), &idle_by, 1.0),
        (n * per_request) as f64,
        "a conversion",
        &prices()?,
    );
    Ok((usage.scaled(k), sending.scaled(k), by))
}

/// A new lead recorded through the API, queuing a `Lead` for the pixel:
/// the lead, its column entry, its counters and its change marker are
/// written with the conversion.
fn new_lead(i: usize) -> (&'static str, serde_json::Value) {
    let hash = adtrail_domain::contact::sha256_hex(&format!("55119{i:08}"));
    (
        "/v1/sites/loja-x/leads",
        json!({"leadKey": format!("lead-{i}"), "changeId": format!("c-{i}"), "occurredAt": T0,
            "origin": "organic", "meta": {"ph": [hash]}}),
    )
}

/// A storefront's sale, for the pixel: the conversion and its marker, and
/// the site's counters once a transaction.
fn sale(i: usize) -> serde_json::Value {
    json!({"eventId": format!("order-{i}"), "event": "purchase", "occurredAt": T0,
        "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
        "valueCents": 4_599, "currency": "BRL", "orderId": format!("{i}"),
        "contact": {"phone": format!("+55 11 9{i:08}")}})
}

/// One sale a request: a storefront posting each checkout, the dearest way.
fn posted_sale(i: usize) -> (&'static str, serde_json::Value) {
    ("/v1/sites/loja-x/events", json!({"events": [sale(i)]}))
}

/// A hundred sales a request, the most `POST /events` takes: a backend
/// posting its orders in batches.
fn posted_hundred(i: usize) -> (&'static str, serde_json::Value) {
    let events: Vec<_> = (i * 100..(i + 1) * 100).map(sale).collect();
    ("/v1/sites/loja-x/events", json!({"events": events}))
}

/// Which accounts a month is priced for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fleet {
    /// The sample agency's four, every ad delivering.
    Delivering,
    /// Four of the agency's accounts whose campaigns are all off (Meta
    /// lists nothing for them): on the quiet cadence given.
    Idle(SyncInterval),
}

/// A day of four accounts, live: syncs every interval (the seed's 45
/// minutes, or an operator's `SyncIntervalMinutes`; for an idle fleet the
/// quiet interval), the daily re-read, the catalog, and the dispatcher's
/// and the sweeper's work for them. Per 1,000 accounts, 30 days.
///
/// The schedules tick every minute however many accounts are linked, so a
/// tick's own cost (the dispatcher's and the sweeper's invocations finding
/// nothing to do) is the idle stack's, on its own line; what an account
/// adds is the rest. The day's ticks are priced that way: each tick's
/// usage less that of a tick with nothing due, measured on the same stack
/// after the day.
async fn accounts(
    latency_ms: u64,
    interval: SyncInterval,
    fleet: Fleet,
) -> Result<(Usage, Vec<String>), Error> {
    use reqwest::Method;
    let settings = match fleet {
        Fleet::Delivering => Settings::every(interval),
        Fleet::Idle(quiet_interval) => Settings {
            quiet_interval,
            ..Settings::every(interval)
        },
    };
    let app = stack_with("bacct", settings).await?;
    let idle: Vec<(&str, String)> = (0..4).map(|i| ("loja-x", format!("act_8{i:09}"))).collect();
    let linked: Vec<(&str, String)> = match fleet {
        Fleet::Delivering => crate::ACCOUNTS
            .iter()
            .map(|(site, account)| (*site, (*account).to_owned()))
            .collect(),
        Fleet::Idle(_) => {
            if let Some(fake) = &app.fake {
                fake.tune(|k| k.extra_accounts = idle.len());
            }
            idle
        }
    };
    for (site, currency) in [("loja-x", "BRL"), ("pet-mania", "USD")] {
        call(
            &app,
            Method::PUT,
            &format!("/v1/sites/{site}"),
            json!({"name": site, "currency": currency}),
        )
        .await?;
    }
    call(
        &app,
        Method::PUT,
        "/v1/meta/connections/agency",
        json!({"accessToken": "bench-token"}),
    )
    .await?;
    for (site, account) in &linked {
        call(
            &app,
            Method::PUT,
            &format!("/v1/sites/{site}/ad-accounts/{account}"),
            json!({"ownerKey": "agency"}),
        )
        .await?;
    }
    let runner = app.runner();
    // The backfill first: not a month's steady cost.
    for _ in 0..6 {
        runner.tick().await?;
        runner.advance(2_000).await?;
    }
    if let Some(fake) = &app.fake {
        fake.tune(|k| k.latency_ms = latency_ms);
    }
    runner.stack.store.counter.reset();
    runner.handler_time.reset();
    let until = runner.now() + DAY_MS;
    let mut ticks = 0;
    while runner.now() < until {
        runner.advance(interval.ms()).await?;
        runner.tick().await?;
        ticks += 1;
    }
    let day = Usage::counted(&app);
    let day_by = units_by(&app);
    runner.stack.store.counter.reset();
    runner.handler_time.reset();
    runner.dispatch().await?;
    runner.sweep().await?;
    let idle_tick = Usage::counted(&app);
    let by = breakdown(
        less(day_by, &units_by(&app), f64::from(ticks)),
        linked.len() as f64,
        "an account-day",
        &prices()?,
    );
    let usage = day.minus(idle_tick.scaled(f64::from(ticks)));
    Ok((usage.scaled(1_000.0 / linked.len() as f64 * 30.0), by))
}

/// An idle stack's month: the dispatcher every minute, the sweeper every
/// five, each finding nothing, and the event sources' pollers receiving
/// nothing; and what the stack keeps.
async fn idle(p: &Prices) -> Result<(Usage, f64), Error> {
    let app = stack("bidle").await?;
    let runner = app.runner();
    let reset = || {
        runner.stack.store.counter.reset();
        runner.handler_time.reset();
    };
    reset();
    runner.dispatch().await?;
    let dispatch = Usage::counted(&app);
    reset();
    runner.sweep().await?;
    let sweep = Usage::counted(&app);
    let month = dispatch
        .scaled(30.0 * 24.0 * 60.0)
        .plus(sweep.scaled(30.0 * 24.0 * 12.0));
    let resources = &runner.stack.template.raw["Resources"];
    let count = |kind: &str| {
        resources.as_mapping().map_or(0, |m| {
            m.values()
                .filter(|r| r["Type"].as_str() == Some(kind))
                .count()
        })
    };
    // Each SQS event source's pollers long-poll its queue whatever the
    // traffic, at most three receives a minute each (a long poll lasts up
    // to 20 seconds): five pollers when the source caps its concurrency,
    // as all of ours do, since only uncapped sources scale down to two
    // (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
    let polls_a_month = 3.0 * 60.0 * 24.0 * 30.0;
    let pollers: f64 = resources
        .as_mapping()
        .into_iter()
        .flat_map(|m| m.values())
        .flat_map(|r| {
            r["Properties"]["Events"]
                .as_mapping()
                .into_iter()
                .flat_map(|e| e.values())
        })
        .filter(|e| e["Type"].as_str() == Some("SQS"))
        .map(|e| {
            if e["Properties"]["ScalingConfig"]["MaximumConcurrency"].is_null() {
                2.0
            } else {
                5.0
            }
        })
        .sum();
    let month = month.plus(Usage {
        sqs: pollers * polls_a_month,
        ..Usage::default()
    });
    let kept = count("AWS::KMS::Key") as f64 * p.kms_key_month
        + p.secretsmanager_secret_month
        + count("AWS::CloudWatch::Dashboard") as f64 * p.cloudwatch_dashboard_month
        + count("AWS::CloudWatch::Alarm") as f64 * p.cloudwatch_alarm_month;
    Ok((month, kept))
}

/// The three figures.
pub(crate) async fn cost_bench(latency_ms: u64) -> Result<(), Error> {
    let p = prices()?;
    println!(
        "cost at AWS list prices for us-east-1 of {} (infra/prices/us-east-1.json):",
        p.date
    );
    let print = |lines: Vec<String>| lines.iter().for_each(|l| println!("{l}"));
    let (whole, sending, by) = conversions(300, 1, posted_sale).await?;
    line("per million posted conversions", &whole, &p, Some(3.0));
    line("  of which sending them", &sending, &p, None);
    print(by);
    let (whole, _, by) = conversions(20, 100, posted_hundred).await?;
    line("  posted a hundred a request", &whole, &p, Some(3.0));
    print(by);
    let (whole, _, _) = conversions(300, 1, new_lead).await?;
    line(
        "per million new leads, one event each",
        &whole,
        &p,
        Some(3.0),
    );
    accounts_bench(latency_ms).await?;
    let (ticks, kept) = idle(&p).await?;
    let tick_cost: f64 = ticks.cost(&p).iter().map(|(_, c)| c).sum();
    println!(
        "cost an idle stack a month               ${:>7.3} (the schedules' ticks and the queues' pollers ${tick_cost:.3}; keys, the app's secret, the dashboard and alarms ${kept:.2})",
        tick_cost + kept
    );
    Ok(())
}

/// The accounts' month at the default interval and at longer ones, alone
/// with `BENCH_ONLY=accounts`.
pub(crate) async fn accounts_bench(latency_ms: u64) -> Result<(), Error> {
    let p = prices()?;
    let print = |lines: Vec<String>| lines.iter().for_each(|l| println!("{l}"));
    let (month, by) = accounts(latency_ms, SyncInterval::DEFAULT, Fleet::Delivering).await?;
    line(
        "per 1,000 linked ad accounts a month (beyond the idle ticks)",
        &month,
        &p,
        Some(1.0),
    );
    print(by);
    // The same month at longer intervals an operator may set: today's
    // spend shows later, and each account costs less.
    for minutes in ["90", "180", "360"] {
        let interval = SyncInterval::from_minutes(minutes)?;
        let (month, by) = accounts(latency_ms, interval, Fleet::Delivering).await?;
        line(
            &format!("  syncing every {minutes} minutes (SyncIntervalMinutes)"),
            &month,
            &p,
            Some(1.0),
        );
        print(by.into_iter().take(4).collect());
    }
    // An agency's long tail: accounts linked and not delivering, read at
    // the quiet interval (`QuietSyncIntervalMinutes`, 180 by default).
    for minutes in ["180", "360"] {
        let quiet = SyncInterval::from_minutes(minutes)?;
        let (month, by) = accounts(latency_ms, SyncInterval::DEFAULT, Fleet::Idle(quiet)).await?;
        line(
            &format!("  idle accounts, quiet every {minutes} min"),
            &month,
            &p,
            Some(1.0),
        );
        print(by.into_iter().take(4).collect());
    }
    Ok(())
}
