//! The month of 1,000 linked ad accounts: a week of live syncs of four
//! accounts (the sample agency's, delivering, or four idle ones settled on
//! the quiet cadence), scaled, beyond what the schedules' ticks cost anyway;
//! beside each delivering month, its write units a run against the two
//! units a run that no design goes under.

use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::DAY_MS;
use adtrail_local::app::Settings;
use serde_json::json;

use super::usage::{Prices, Usage, prices};
use super::{breakdown, call, less, line, stack_with, units_by};
use crate::Error;

/// The days counted: a week, so the month has its share of the weekly
/// 28-day re-read (a seventh of it a day) as well as each day's own runs
/// and the daily 7-day re-read. `BENCH_ACCOUNT_DAYS` counts fewer, for a
/// quicker look (one day: a fifth of the time, without the weekly).
fn days_counted() -> u32 {
    std::env::var("BENCH_ACCOUNT_DAYS")
        .ok()
        .and_then(|d| d.parse().ok())
        .filter(|d| (1..=28).contains(d))
        .unwrap_or(7)
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

/// A week of four accounts, live: syncs every interval (the seed's 45
/// minutes, or an operator's `SyncIntervalMinutes`; for an idle fleet the
/// quiet interval), the daily and weekly re-reads, the catalog, and the
/// dispatcher's and the sweeper's work for them. Per 1,000 accounts, 30
/// days.
///
/// The schedules tick every minute however many accounts are linked, so a
/// tick's own cost (the dispatcher's and the sweeper's invocations finding
/// nothing to do) is the idle stack's, on its own line; what an account
/// adds is the rest. The week's ticks are priced that way: each tick's
/// usage less that of a tick with nothing due, measured on the same stack
/// after the week.
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
    // The first live runs place each account at a slot of its cadence;
    // an idle fleet's find nothing delivered and send it to the quiet
    // cadence, whose first run places it there. Moves made once, not
    // every day, so they are made before the days counted.
    let settle = match fleet {
        Fleet::Delivering => interval.ms(),
        Fleet::Idle(quiet) => 2 * quiet.ms(),
    };
    let settled = runner.now() + settle;
    while runner.now() < settled {
        runner.advance(interval.ms()).await?;
        runner.tick().await?;
    }
    if let Some(fake) = &app.fake {
        fake.tune(|k| k.latency_ms = latency_ms);
    }
    runner.stack.store.counter.reset();
    runner.handler_time.reset();
    let days_counted = days_counted();
    let until = runner.now() + i64::from(days_counted) * DAY_MS;
    let mut ticks = 0;
    while runner.now() < until {
        runner.advance(interval.ms()).await?;
        runner.tick().await?;
        ticks += 1;
    }
    let counted = Usage::counted(&app);
    let counted_by = units_by(&app);
    // A tick with nothing due, to take off each of the week's: its units
    // are the same every time, its handler time is not (the median of five).
    let mut idle_ticks = vec![];
    for _ in 0..5 {
        // A second on: the walk of the slots reads and moves its cursor,
        // as every tick's does.
        runner.advance(1_000).await?;
        runner.stack.store.counter.reset();
        runner.handler_time.reset();
        runner.dispatch().await?;
        runner.sweep().await?;
        idle_ticks.push(Usage::counted(&app));
    }
    idle_ticks.sort_by(|a, b| a.gb_seconds.total_cmp(&b.gb_seconds));
    let idle_tick = idle_ticks[idle_ticks.len() / 2];
    let days = f64::from(days_counted);
    let by = breakdown(
        less(counted_by, &units_by(&app), f64::from(ticks)),
        linked.len() as f64 * days,
        "an account-day",
        &prices()?,
    );
    let usage = counted.minus(idle_tick.scaled(f64::from(ticks)));
    Ok((
        usage.scaled(1_000.0 / linked.len() as f64 * 30.0 / days),
        by,
    ))
}

/// The write units a delivering fleet's run takes, against the fewest any
/// design could: a run's lease is a write (DESIGN: every run holds one),
/// and a delivering account's today has moved since the last run, so its
/// spend is another. Two units a run are a floor no code change goes
/// under; the line says what it costs at this interval.
fn floor_line(interval: SyncInterval, month: &Usage, p: &Prices) -> String {
    const FLOOR_UNITS_A_RUN: f64 = 2.0;
    let runs = 1_000.0 * 30.0 * DAY_MS as f64 / interval.ms() as f64;
    format!(
        "       a run: {:.2} WRU of {runs:.0} runs a month; the floor of 2 WRU a run (its lease, its spend) costs ${:.3}",
        month.write_units / runs,
        runs * FLOOR_UNITS_A_RUN * p.dynamodb_write_request_unit,
    )
}

/// What KMS would add if each account had an owner of its own: the
/// bench's accounts share the sample agency's token, which a worker opens
/// once and keeps for a quarter of an hour (`run/token.rs`), so a tick's
/// runs open it once; an owner's own token is opened by each run of a
/// cadence longer than that.
fn owners_line(interval: SyncInterval, month: &Usage, p: &Prices) -> String {
    let runs = 1_000.0 * 30.0 * DAY_MS as f64 / interval.ms() as f64;
    let opened = month.kms.min(runs);
    format!(
        "       KMS: {opened:.0} token opens a month (the agency's token, kept a quarter of an hour); with an owner an account, one a run: ${:.3} more",
        (runs - opened) * p.kms_request,
    )
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
    println!("{}", floor_line(SyncInterval::DEFAULT, &month, &p));
    println!("{}", owners_line(SyncInterval::DEFAULT, &month, &p));
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
        println!("{}", floor_line(interval, &month, &p));
        println!("{}", owners_line(interval, &month, &p));
        print(by.into_iter().take(4).collect());
    }
    // An agency's long tail: accounts linked and not delivering, read at
    // the quiet interval (`QuietSyncIntervalMinutes`, 180 by default; 45,
    // the sync interval, turns quiet syncs off).
    for minutes in ["45", "180", "360"] {
        let quiet = SyncInterval::from_minutes(minutes)?;
        let (month, by) = accounts(latency_ms, SyncInterval::DEFAULT, Fleet::Idle(quiet)).await?;
        line(
            &if quiet == SyncInterval::DEFAULT {
                "  idle accounts, quiet syncs off".to_owned()
            } else {
                format!("  idle accounts, quiet every {minutes} min")
            },
            &month,
            &p,
            Some(1.0),
        );
        println!("{}", owners_line(quiet, &month, &p));
        print(by.into_iter().take(4).collect());
    }
    Ok(())
}
