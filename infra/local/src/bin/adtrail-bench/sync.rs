//! The sync's figures: a 90-day backfill of the sample agency, the weekly
//! resync where nothing changed, and the two reports over what was stored.

use std::sync::Arc;
use std::time::Instant;

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS, VirtualClock};
use adtrail_fake_meta::Knobs;
use adtrail_local::app::{App, start};
use serde_json::json;

use crate::{ACCOUNTS, Error, T0};

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Figures {
    pub(crate) rows: u64,
    pub(crate) ddb: u64,
    pub(crate) meta: u64,
    pub(crate) cdn: u64,
    pub(crate) millis: u128,
}

/// What one read of each report cost.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReportFigures {
    pub(crate) leads_ddb: u64,
    pub(crate) leads_ms: u128,
    pub(crate) leads_ads: u64,
    /// Of the leads report's time: reading the per-ad rows alone, and
    /// presigning one URL per ad row.
    pub(crate) rows_ms: u128,
    pub(crate) presign_ms: u128,
    pub(crate) daily_ddb: u64,
    pub(crate) daily_ms: u128,
}

/// Two sites, the agency connected, its four accounts linked.
async fn link_agency(app: &App) -> Result<(), Error> {
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
    Ok(())
}

/// The weekly resync, a week later, when Meta's figures did not change.
async fn weekly_resync(app: &App, fake: &adtrail_fake_meta::FakeMeta) -> Result<Figures, Error> {
    let runner = app.runner();
    let store = &runner.stack.store;
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
    let (meta, cdn) = graph_and_cdn(fake);
    let resync = Figures {
        rows: covered,
        ddb: store.counter.get("dynamodb"),
        meta,
        cdn,
        millis: resync_ms,
    };
    Ok(resync)
}

pub(crate) async fn one_run(latency_ms: u64) -> Result<(Figures, Figures, ReportFigures), Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bench-{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let app = start("127.0.0.1:0".parse()?, Arc::new(clock.clone()), &prefix).await?;
    let fake = app.fake.clone().ok_or("the bench needs the fake Meta")?;
    link_agency(&app).await?;
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

    let reports = measure_reports(&app, runner.now()).await?;

    let resync = weekly_resync(&app, &fake).await?;
    Ok((backfill, resync, reports))
}

/// 120 leads over the last 60 days, half of them from the BRL accounts'
/// ads: answers those ads.
async fn record_leads(app: &App, now: i64) -> Result<Vec<String>, Error> {
    let http = reqwest::Client::new();
    let token = app.host_token();
    let call = |method: reqwest::Method, path: String, body: serde_json::Value| {
        http.request(method, format!("{}{path}", app.api_url))
            .bearer_auth(&token)
            .json(&body)
            .send()
    };
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
    Ok(ads)
}

/// The two reports over what the backfill stored and 120 leads (half from
/// ads), side by side: DynamoDB requests and wall time of each, and of the
/// leads report's time, reading the per-ad rows and presigning thumbnails.
async fn measure_reports(app: &App, now: i64) -> Result<ReportFigures, Error> {
    let store = &app.runner().stack.store;
    let http = reqwest::Client::new();
    let token = app.host_token();
    let ads = record_leads(app, now).await?;
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
    Ok(reports)
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
