//! The sender per platform, side by side: storefront events posted
//! through the API to a site with its pixel and a destination on each of
//! the other four platforms, drained through the queue; requests to each
//! platform and DynamoDB requests per 1,000 events, batched against one
//! event a request.

use std::time::Instant;

use adtrail_domain::time::VirtualClock;
use serde_json::{Value, json};

use crate::{Error, T0};

/// What one drain cost.
struct Figures {
    events: usize,
    /// Requests each platform received, by name.
    requests: Vec<(&'static str, usize)>,
    post_ddb: u64,
    send_ddb: u64,
    rows: usize,
    millis: f64,
}

/// The site, its connection, its pixel (and event map) and a destination
/// on each of the other four platforms.
fn setup() -> Vec<(&'static str, Value)> {
    let mut puts = crate::pixel_site().to_vec();
    puts.extend([
        (
            "/v1/sites/loja-x/destinations/tiktok",
            json!({"platform": "tiktok", "pixelCode": "C4BENCH",
            "credentials": {"accessToken": adtrail_fake_platforms::TIKTOK_TOKEN}}),
        ),
        (
            "/v1/sites/loja-x/destinations/pinterest",
            json!({"platform": "pinterest", "adAccountId": "549755885175",
            "credentials": {"accessToken": adtrail_fake_platforms::PINTEREST_TOKEN}}),
        ),
        (
            "/v1/sites/loja-x/destinations/snap",
            json!({"platform": "snap", "pixelId": "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d",
            "credentials": {"accessToken": adtrail_fake_platforms::SNAP_TOKEN}}),
        ),
        (
            "/v1/sites/loja-x/destinations/google",
            json!({"platform": "google", "operatingAccount": "1234567890",
            "conversionActions": {"purchase": "555001"},
            "credentials": {"clientId": adtrail_fake_platforms::GOOGLE_CLIENT_ID,
                "clientSecret": adtrail_fake_platforms::GOOGLE_CLIENT_SECRET,
                "refreshToken": adtrail_fake_platforms::GOOGLE_REFRESH_TOKEN}}),
        ),
    ]);
    puts
}

/// `events` storefront purchases in requests of 100.
fn storefront_batches(events: usize) -> Vec<Vec<Value>> {
    (0..events)
        .map(|i| {
            json!({"eventId": format!("b-{i}"), "event": "purchase", "occurredAt": T0,
                "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
                "valueCents": 45990, "currency": "BRL",
                "contact": {"email": format!("buyer{i}@example.com"), "phone": format!("+55 11 9{i:08}"),
                            "ip": "203.0.113.9", "userAgent": "Mozilla/5.0"}})
        })
        .collect::<Vec<_>>()
        .chunks(100)
        .map(<[Value]>::to_vec)
        .collect()
}

async fn run(per_request: usize, events: usize) -> Result<Figures, Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bplat-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let app = crate::start_sending(per_request, clock.clone(), &prefix).await?;
    let meta = app.fake.clone().ok_or("the bench needs the fake Meta")?;
    let fakes = app
        .platforms
        .clone()
        .ok_or("the bench needs the platforms' fakes")?;
    let http = reqwest::Client::new();
    let token = app.host_token();
    let call = |method: reqwest::Method, path: &str, body: Value| {
        http.request(method, format!("{}{path}", app.api_url))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
    use reqwest::Method;
    for (path, body) in setup() {
        call(Method::PUT, path, body).await?.error_for_status()?;
    }
    let store = &app.runner().stack.store;
    store.counter.reset();
    let batches = storefront_batches(events);
    let mut rows = 0;
    for batch in batches {
        let answer: Value = call(
            Method::POST,
            "/v1/sites/loja-x/events",
            json!({"events": batch}),
        )
        .await?
        .error_for_status()?
        .json()
        .await?;
        rows += answer["queued"].as_u64().unwrap_or(0) as usize;
    }
    let post_ddb = store.counter.get("dynamodb");
    store.counter.reset();
    meta.clear_requests();
    let platforms = ["tiktok", "pinterest", "snap", "google"];
    let before: Vec<usize> = platforms.iter().map(|p| fakes.requests_to(p)).collect();
    let started = Instant::now();
    app.runner().drain().await?;
    let millis = started.elapsed().as_secs_f64() * 1_000.0;
    let send_ddb = store.counter.get("dynamodb");
    // Each fake counts the requests it served.
    let meta_requests = meta
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events"))
        .count();
    let requests = std::iter::once(("meta", meta_requests))
        .chain(
            platforms
                .iter()
                .zip(&before)
                .map(|(p, b)| (*p, fakes.requests_to(p) - b)),
        )
        .collect();
    Ok(Figures {
        events,
        requests,
        post_ddb,
        send_ddb,
        rows,
        millis,
    })
}

/// Batched against one event a request, in one run.
pub(crate) async fn platforms_bench() -> Result<(), Error> {
    let mut figures = vec![];
    for (label, per_request, events) in [("batched", 2_000, 1_000), ("one event a request", 1, 100)]
    {
        let f = run(per_request, events).await?;
        let per_k = |v: f64| v * 1_000.0 / f.events as f64;
        let by: Vec<String> = f
            .requests
            .iter()
            .map(|(name, n)| format!("{name} {:.1}", per_k(*n as f64)))
            .collect();
        let destinations = f.requests.len() as f64;
        println!(
            "platforms {label:<20} {} events x {} destinations ({} rows) | requests per 1k events: {} | dynamodb per 1k events per destination: post {:.1}, send {:.1} | send wall ms {:.0}",
            f.events,
            f.requests.len(),
            f.rows,
            by.join(", "),
            per_k(f.post_ddb as f64) / destinations,
            per_k(f.send_ddb as f64) / destinations,
            f.millis
        );
        figures.push(f);
    }
    let per_k = |f: &Figures, v: u64| v as f64 * 1_000.0 / f.events as f64;
    println!(
        "ratio: one event a request costs {:.0}x the platform requests and {:.1}x the sender's DynamoDB requests of batching",
        per_k(
            &figures[1],
            figures[1].requests.iter().map(|r| r.1 as u64).sum()
        ) / per_k(
            &figures[0],
            figures[0].requests.iter().map(|r| r.1 as u64).sum()
        )
        .max(0.001),
        per_k(&figures[1], figures[1].send_ddb)
            / per_k(&figures[0], figures[0].send_ddb).max(0.001)
    );
    Ok(())
}
