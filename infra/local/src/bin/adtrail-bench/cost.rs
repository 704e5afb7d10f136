//! What running adtrail costs, computed from what the bench counted: the
//! Lambda GB-seconds of the measured handler times at the template's
//! memory sizes, the requests to SQS, KMS, EventBridge, Secrets Manager, S3
//! and API Gateway, and DynamoDB's request units from item sizes (with a
//! transaction's doubling), times AWS's list prices for us-east-1 kept in
//! `infra/prices/us-east-1.json` with their date and sources.
//!
//! Four figures: a million conversions posted by a storefront (one sale a
//! request, for the pixel, sent batched), a million new leads recorded
//! through the API that each queue one event for the pixel (the lead's own
//! writes with it), a month of 1,000 linked ad accounts (a day of live syncs of the sample
//! agency, scaled), and a month of an idle stack (the schedules' ticks and
//! what the stack keeps: keys, the app's secret, the dashboard, alarms).

use std::sync::Arc;

use adtrail_domain::time::{DAY_MS, MINUTE_MS, VirtualClock};
use adtrail_local::app::{App, start};
use serde::Deserialize;
use serde_json::json;

use crate::{Error, T0};

/// Log bytes an invocation writes at INFO (its summary line and the
/// runtime's), and an API request's access log line: measured from the
/// lines' formats, not captured.
const LOG_BYTES_PER_INVOCATION: f64 = 600.0;
const LOG_BYTES_PER_API_REQUEST: f64 = 300.0;

#[derive(Debug, Deserialize)]
struct Prices {
    date: String,
    lambda_arm_gb_second: f64,
    lambda_request: f64,
    dynamodb_write_request_unit: f64,
    dynamodb_read_request_unit: f64,
    sqs_request: f64,
    kms_request: f64,
    kms_key_month: f64,
    eventbridge_custom_event: f64,
    secretsmanager_secret_month: f64,
    secretsmanager_request: f64,
    http_api_request: f64,
    s3_put_request: f64,
    cloudwatch_logs_ingested_gb: f64,
    cloudwatch_dashboard_month: f64,
    cloudwatch_alarm_month: f64,
}

fn prices() -> Result<Prices, Error> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prices/us-east-1.json");
    Ok(serde_json::from_str(&std::fs::read_to_string(path)?)?)
}

/// What a piece of work used, in the units AWS bills.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    gb_seconds: f64,
    invocations: f64,
    write_units: f64,
    read_units: f64,
    sqs: f64,
    kms: f64,
    events: f64,
    secrets: f64,
    api: f64,
    s3: f64,
    log_bytes: f64,
}

impl Usage {
    /// What the stack's clients counted, and the functions' invocations
    /// and handler time, each at its memory size in the template.
    fn counted(app: &App) -> Self {
        let runner = app.runner();
        let c = &runner.stack.store.counter;
        let raw = &runner.stack.template.raw;
        let global = raw["Globals"]["Function"]["MemorySize"]
            .as_f64()
            .unwrap_or(128.0);
        let (mut gb_seconds, mut invocations) = (0.0, 0.0);
        for (function, (n, ms)) in runner.handler_time.snapshot() {
            let mb = raw["Resources"][function.as_str()]["Properties"]["MemorySize"]
                .as_f64()
                .unwrap_or(global);
            gb_seconds += ms / 1_000.0 * mb / 1_024.0;
            invocations += n as f64;
        }
        Usage {
            gb_seconds,
            invocations,
            write_units: c.write_units(),
            read_units: c.read_units(),
            sqs: c.get("sqs") as f64,
            kms: c.get("kms") as f64,
            events: c.get("eventbridge") as f64,
            secrets: c.get("secretsmanager") as f64,
            api: 0.0,
            s3: c.get("s3") as f64,
            log_bytes: invocations * LOG_BYTES_PER_INVOCATION,
        }
    }

    fn scaled(self, k: f64) -> Self {
        Usage {
            gb_seconds: self.gb_seconds * k,
            invocations: self.invocations * k,
            write_units: self.write_units * k,
            read_units: self.read_units * k,
            sqs: self.sqs * k,
            kms: self.kms * k,
            events: self.events * k,
            secrets: self.secrets * k,
            api: self.api * k,
            s3: self.s3 * k,
            log_bytes: self.log_bytes * k,
        }
    }

    fn minus(self, o: Self) -> Self {
        self.plus(o.scaled(-1.0))
    }

    fn plus(self, o: Self) -> Self {
        Usage {
            gb_seconds: self.gb_seconds + o.gb_seconds,
            invocations: self.invocations + o.invocations,
            write_units: self.write_units + o.write_units,
            read_units: self.read_units + o.read_units,
            sqs: self.sqs + o.sqs,
            kms: self.kms + o.kms,
            events: self.events + o.events,
            secrets: self.secrets + o.secrets,
            api: self.api + o.api,
            s3: self.s3 + o.s3,
            log_bytes: self.log_bytes + o.log_bytes,
        }
    }

    /// Dollars by service: Lambda, DynamoDB, SQS, the rest.
    fn cost(&self, p: &Prices) -> [(&'static str, f64); 4] {
        let lambda = self.gb_seconds * p.lambda_arm_gb_second + self.invocations * p.lambda_request;
        let dynamodb = self.write_units * p.dynamodb_write_request_unit
            + self.read_units * p.dynamodb_read_request_unit;
        let sqs = self.sqs * p.sqs_request;
        let rest = self.kms * p.kms_request
            + self.events * p.eventbridge_custom_event
            + self.secrets * p.secretsmanager_request
            + self.api * p.http_api_request
            + self.s3 * p.s3_put_request
            + self.log_bytes / 1e9 * p.cloudwatch_logs_ingested_gb;
        [
            ("lambda", lambda),
            ("dynamodb", dynamodb),
            ("sqs", sqs),
            ("the rest", rest),
        ]
    }
}

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

async fn stack(prefix: &str) -> Result<App, Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    );
    start("127.0.0.1:0".parse()?, Arc::new(clock), &prefix).await
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
/// sent; the usage of all, times a million over the conversions, and of
/// their sending alone (the queue, the sender, the rows' claims and ends).
async fn conversions(
    n: usize,
    per_request: usize,
    request: impl Fn(usize) -> (&'static str, serde_json::Value),
) -> Result<(Usage, Usage), Error> {
    use reqwest::Method;
    let app = stack("bcost").await?;
    for (path, body) in [
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
    ] {
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
    let mut usage = Usage::counted(&app);
    let sending = usage.minus(recorded);
    usage.api = n as f64;
    usage.log_bytes += n as f64 * LOG_BYTES_PER_API_REQUEST;
    let k = 1e6 / (n * per_request) as f64;
    Ok((usage.scaled(k), sending.scaled(k)))
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

/// A day of the sample agency's four accounts, live: syncs every 45
/// minutes, the daily re-read, the catalog; the dispatcher and the sweeper
/// on the same ticks. Per 1,000 accounts, 30 days.
async fn accounts(latency_ms: u64) -> Result<Usage, Error> {
    use reqwest::Method;
    let app = stack("bacct").await?;
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
    for (site, account) in crate::ACCOUNTS {
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
    while runner.now() < until {
        runner.advance(45 * MINUTE_MS).await?;
        runner.tick().await?;
    }
    let usage = Usage::counted(&app);
    Ok(usage.scaled(1_000.0 / crate::ACCOUNTS.len() as f64 * 30.0))
}

/// An idle stack's month: the dispatcher every minute, the sweeper every
/// five, each finding nothing; and what the stack keeps.
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
    let (whole, sending) = conversions(300, 1, posted_sale).await?;
    line("per million posted conversions", &whole, &p, Some(3.0));
    line("  of which sending them", &sending, &p, None);
    let (whole, _) = conversions(20, 100, posted_hundred).await?;
    line("  posted a hundred a request", &whole, &p, Some(3.0));
    let (whole, _) = conversions(300, 1, new_lead).await?;
    line(
        "per million new leads, one event each",
        &whole,
        &p,
        Some(3.0),
    );
    line(
        "per 1,000 linked ad accounts a month",
        &accounts(latency_ms).await?,
        &p,
        Some(1.0),
    );
    let (ticks, kept) = idle(&p).await?;
    let tick_cost: f64 = ticks.cost(&p).iter().map(|(_, c)| c).sum();
    println!(
        "cost an idle stack a month               ${:>7.3} (the schedules' ticks ${tick_cost:.3}; keys, the app's secret, the dashboard and alarms ${kept:.2})",
        tick_cost + kept
    );
    Ok(())
}
