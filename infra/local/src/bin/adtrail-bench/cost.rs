//! What running adtrail costs, computed from what the bench counted: the
//! Lambda GB-seconds of the measured handler times at the template's
//! memory sizes, the requests to SQS, KMS, EventBridge, Secrets Manager, S3
//! and API Gateway, and DynamoDB's request units from item sizes (with a
//! transaction's doubling, an update priced by its whole item, and each
//! index entry written), times AWS's list prices for us-east-1 kept in
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

use adtrail_domain::time::{MINUTE_MS, VirtualClock};
use adtrail_local::app::{App, Settings, start_with};
use serde_json::json;

use crate::{Error, T0};

mod accounts;
mod usage;

pub(crate) use accounts::accounts_bench;
use usage::{LOG_BYTES_PER_API_REQUEST, PLATFORM_LOG_BYTES_PER_INVOCATION, Prices, Usage, prices};

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
        "cost {label:<38} ${total:>7.3} ({}; {:.0} WRU, {:.0} RRU, {:.0} GB-s, {:.0} invocations; Tracing=Active would add up to ${:.3}){verdict}",
        detail.join(", "),
        usage.write_units,
        usage.read_units,
        usage.gb_seconds,
        usage.invocations,
        usage.tracing(p),
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
        // Each request in a millisecond of its own, as a storefront's are:
        // on a clock that stands still they would all share one send
        // batch item, which grows with each (and costs by its size).
        app.runner().advance(1).await?;
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
    // A tick as every one after the first: the dispatcher's walk of the
    // slots goes on from the cursor the last tick left, a minute back.
    runner.dispatch().await?;
    runner.advance(60_000).await?;
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

/// What a million conversions posted one a request cost at the least,
/// whatever the code: each is an API request and an invocation of the API
/// function (with Lambda's own log lines and the access log's line, which
/// the template keeps), a row written once (its key taken conditionally,
/// so a replay writes nothing) and written again when it is sent (its end,
/// so it is not sent twice), and a message to the sender. A design that
/// counted nothing, read nothing and ran in no time would still pay this.
fn conversion_floor_line(million: &Usage, p: &Prices) -> String {
    let floor = Usage {
        api: 1e6,
        invocations: 1e6,
        log_bytes: 1e6 * (PLATFORM_LOG_BYTES_PER_INVOCATION + LOG_BYTES_PER_API_REQUEST),
        write_units: 2e6,
        sqs: 1e6,
        ..Usage::default()
    };
    let dollars: f64 = floor.cost(p).iter().map(|(_, c)| c).sum();
    format!(
        "       a conversion: {:.2} WRU; the floor of one a request (its API request, its invocation and their log lines, its row written and ended: 2 WRU, its queue message) costs ${dollars:.3}",
        million.write_units / 1e6,
    )
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
    println!("{}", conversion_floor_line(&whole, &p));
    line("  of which sending them", &sending, &p, None);
    print(by);
    let (whole, _, by) = conversions(20, 100, posted_hundred).await?;
    line("  posted a hundred a request", &whole, &p, Some(3.0));
    print(by);
    let (whole, _, by) = conversions(300, 1, new_lead).await?;
    line(
        "per million new leads, one event each",
        &whole,
        &p,
        Some(3.0),
    );
    print(by);
    accounts_bench(latency_ms).await?;
    let (ticks, kept) = idle(&p).await?;
    let tick_cost: f64 = ticks.cost(&p).iter().map(|(_, c)| c).sum();
    println!(
        "cost an idle stack a month               ${:>7.3} (the schedules' ticks and the queues' pollers ${tick_cost:.3}; keys, the app's secret, the dashboard and alarms ${kept:.2}; Tracing=Active would add up to ${:.3})",
        tick_cost + kept,
        ticks.tracing(&p),
    );
    // CloudWatch bills each metric (a name with its dimensions' values) by
    // the hour: $0.30 a month for one written every hour, nothing in an
    // hour it is not. An idle stack writes none (a counter that did not
    // move is left out); a busy one pays for each it writes, whatever its
    // volume. The runner flushes the functions' recorder after each
    // invocation, as their mains do, and keeps what the documents named.
    let seen = adtrail_local::runner::metrics_seen();
    println!(
        "cost the metrics a stack with traffic writes ${:>7.3} a month ({} metrics these runs wrote, each billed ${:.2} a month when written every hour, whatever the volume; each error class or failure reason that occurs adds one): {}",
        seen.len() as f64 * p.cloudwatch_metric_month,
        seen.len(),
        p.cloudwatch_metric_month,
        seen.iter().cloned().collect::<Vec<_>>().join(" "),
    );
    Ok(())
}
