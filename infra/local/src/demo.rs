//! The demo scenario, driven through the HTTP API as a host's server would:
//! two sites, the fake Meta's sample agency connected with a pasted token,
//! its four ad accounts linked (two per site), the 90-day backfill and a live
//! sync run by the dispatcher and workers on a virtual clock, then each
//! site's last 30 days and each account's sync state; then Loja X's board,
//! leads and a sale sent to its Meta pixel through the send queue, with a
//! retry after Meta fails once; last, a TikTok destination beside the pixel
//! and one storefront sale reaching both, each with its own hashes; and
//! Lead Ads: Loja X's Page linked, its form's rules, three form leads
//! routed, and the forms report; and a closed shop erased.

mod erase;
mod leadads;
mod storefront;

use adtrail_domain::time::{DAY_MS, MINUTE_MS};
use adtrail_local::app::App;
use serde_json::{Value, json};

mod client;
pub(crate) use client::{Client, Error};

fn money(cents: &Value, currency: &str) -> String {
    match cents.as_i64() {
        Some(c) => format!("{currency} {}.{:02}", c / 100, c % 100),
        None => "—".into(),
    }
}

pub async fn run(app: &App) -> Result<(), Error> {
    let c = Client {
        http: reqwest::Client::new(),
        base: app.api_url.clone(),
        token: app.host_token(),
    };
    println!(
        "adtrail demo: local AWS (moto) at {}, fake Meta, API at {}\n",
        app.moto.url, app.api_url
    );

    connect_and_link(&c).await?;
    backfill(app, &c).await?;
    show_spend(app, &c).await?;
    conversions(app, &c).await?;
    storefront::storefront(app, &c).await?;
    leadads::lead_ads(app, &c).await?;
    erase::erase(app, &c).await?;
    println!("\ndemo finished");
    Ok(())
}

/// Two sites, the sample agency connected, each account linked to the site
/// that bills in its currency.
async fn connect_and_link(c: &Client) -> Result<(), Error> {
    for (site, name, currency, country) in [
        ("loja-x", "Loja X", "BRL", "BR"),
        ("pet-mania", "Pet Mania", "USD", "US"),
    ] {
        c.call(
            reqwest::Method::PUT,
            &format!("/v1/sites/{site}"),
            Some(json!({"name": name, "currency": currency, "country": country})),
        )
        .await?;
        println!("registered site {site} ({name}, {currency})");
    }
    let connection = c
        .call(
            reqwest::Method::PUT,
            "/v1/meta/connections/agency",
            Some(json!({"accessToken": "sample-agency-token"})),
        )
        .await?;
    println!("\nconnected the sample agency; its token lists:");
    let accounts = connection["adAccounts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for a in &accounts {
        println!(
            "  {}  {:<22} {}  {}",
            a["adAccountId"].as_str().unwrap_or(""),
            a["name"].as_str().unwrap_or(""),
            a["currency"].as_str().unwrap_or(""),
            a["timezone"].as_str().unwrap_or("")
        );
    }
    for a in &accounts {
        let site = if a["currency"] == "BRL" {
            "loja-x"
        } else {
            "pet-mania"
        };
        let id = a["adAccountId"].as_str().unwrap_or("");
        c.call(
            reqwest::Method::PUT,
            &format!("/v1/sites/{site}/ad-accounts/{id}"),
            Some(json!({"ownerKey": "agency"})),
        )
        .await?;
        println!("linked {id} to {site}");
    }

    Ok(())
}

/// The backfill on the virtual clock, tick by tick, then a live run.
async fn backfill(app: &App, c: &Client) -> Result<(), Error> {
    let runner = app.runner();
    println!("\nbackfill (90 days in 30-day blocks), on a virtual clock:");
    for step in 1..=10 {
        let tick = runner.tick().await?;
        let status = c
            .call(
                reqwest::Method::GET,
                "/v1/meta/status?siteIds=loja-x,pet-mania",
                None,
            )
            .await?;
        let states: Vec<String> = status["sites"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["adAccounts"].as_array().cloned().unwrap_or_default())
            .map(|a| match a["backfill"].as_object() {
                Some(b) => format!(
                    "{} {}/{}",
                    a["syncState"].as_str().unwrap_or(""),
                    b["done"],
                    b["total"]
                ),
                None => a["syncState"].as_str().unwrap_or("").to_owned(),
            })
            .collect();
        println!(
            "  tick {step}: {} runs dispatched; accounts: {}",
            tick.dispatched.sent,
            states.join(", ")
        );
        if states.iter().all(|s| s == "live") {
            break;
        }
        runner.advance(2_000).await?;
    }
    // The seed's 45 minutes, or SYNC_INTERVAL_MINUTES.
    let interval = runner.dispatcher.interval.ms();
    runner.advance(interval).await?;
    let live = runner.tick().await?;
    println!(
        "  {} minutes later: {} live runs (today and yesterday)",
        interval / MINUTE_MS,
        live.dispatched.sent
    );

    Ok(())
}

/// Each site's last 30 days: totals, a bar per day, top ads, accounts.
async fn show_spend(app: &App, c: &Client) -> Result<(), Error> {
    let runner = app.runner();
    let today = runner.now() - runner.now().rem_euclid(DAY_MS);
    let from = today - 29 * DAY_MS;
    for site in ["loja-x", "pet-mania"] {
        let spend = c
            .call(
                reqwest::Method::GET,
                &format!("/v1/sites/{site}/spend?from={from}&to={today}"),
                None,
            )
            .await?;
        let cur = spend["spendCurrency"].as_str().unwrap_or("?");
        let t = &spend["totals"];
        println!("\n{site}: last 30 days");
        println!(
            "  spend {}   impressions {}   clicks {}",
            money(&t["spendCents"], cur),
            t["impressions"],
            t["clicks"]
        );
        let days = spend["days"].as_array().cloned().unwrap_or_default();
        let max = days
            .iter()
            .filter_map(|d| d["spendCents"].as_i64())
            .max()
            .unwrap_or(1)
            .max(1);
        let bars: String = days
            .iter()
            .map(|d| {
                let v = d["spendCents"].as_i64().unwrap_or(0);
                ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'][((v * 7) / max) as usize]
            })
            .collect();
        println!("  per day  {bars}");
        println!("  top ads:");
        for ad in spend["ads"].as_array().into_iter().flatten().take(3) {
            println!(
                "    {:<28} {:>14}  {} impressions",
                ad["adName"].as_str().unwrap_or("?"),
                money(&ad["spendCents"], cur),
                ad["impressions"]
            );
        }
        println!("  accounts:");
        for a in spend["adAccounts"].as_array().into_iter().flatten() {
            println!(
                "    {} {:<22} {:<5} last sync {}  error {}  spend {}",
                a["adAccountId"].as_str().unwrap_or(""),
                a["name"].as_str().unwrap_or(""),
                a["syncState"].as_str().unwrap_or(""),
                a["lastSyncAt"]
                    .as_i64()
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .map_or_else(
                        || "—".to_owned(),
                        |t| t.format("%Y-%m-%d %H:%M UTC").to_string()
                    ),
                a["lastError"].as_str().unwrap_or("none"),
                money(&a["spendCents"], a["currency"].as_str().unwrap_or("")),
            );
        }
    }
    Ok(())
}

/// Loja X's sales and board moves sent back to its Meta pixel.
async fn conversions(app: &App, c: &Client) -> Result<(), Error> {
    println!("\nconversions: Loja X's sales and board moves, sent to its Meta pixel");
    pixel_and_board(c).await?;
    leads_and_moves(app, c).await?;
    sends(app, c).await
}

/// Loja X's pixel (with the agency's token), its board and event map.
async fn pixel_and_board(c: &Client) -> Result<(), Error> {
    use reqwest::Method;
    let pixel = c
        .call(
            Method::PUT,
            "/v1/sites/loja-x/pixel",
            Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
        )
        .await?;
    println!(
        "  pixel {} ({}), with the agency's token",
        pixel["pixel"]["pixelId"].as_str().unwrap_or(""),
        pixel["pixel"]["name"].as_str().unwrap_or("")
    );
    c.call(
        Method::PUT,
        "/v1/sites/loja-x/pipeline",
        Some(json!({"columns": [
            {"key": "novo", "name": "Novo lead", "group": "Prospecção"},
            {"key": "qualificado", "name": "Qualificado", "group": "Prospecção"},
            {"key": "agendado", "name": "Agendado", "group": "Hora do Show", "color": "#f97316"},
            {"key": "fechado", "name": "Fechado"},
        ]})),
    )
    .await?;
    c.call(
        Method::PUT,
        "/v1/sites/loja-x/event-map",
        Some(json!({"columns": {"qualificado": "QualifiedLead", "agendado": "Schedule"}, "sendLeadEvent": true})),
    )
    .await?;
    Ok(())
}

/// Three leads (one brought by an ad), then board moves and a sale; the
/// same change sent twice does nothing.
async fn leads_and_moves(app: &App, c: &Client) -> Result<(), Error> {
    use reqwest::Method;
    let runner = app.runner();
    // An ad of Loja X's catalog brought the first lead.
    let now = runner.now();
    let today = now - now.rem_euclid(DAY_MS);
    let spend = c
        .call(
            Method::GET,
            &format!(
                "/v1/sites/loja-x/spend?from={}&to={today}",
                today - 6 * DAY_MS
            ),
            None,
        )
        .await?;
    let ad = spend["ads"][0]["adId"].as_str().unwrap_or("1").to_owned();
    let meta = |who: &str| {
        json!({"ph": [adtrail_domain::contact::sha256_hex(&format!("55119{who:0>8}"))],
               "externalId": adtrail_domain::contact::sha256_hex(who)})
    };
    let leads = [
        (
            "ana",
            "Ana Souza",
            json!({"origin": "ctwa_ad", "adId": ad, "column": "novo"}),
        ),
        (
            "bia",
            "Bia Lima",
            json!({"origin": "organic", "column": "novo"}),
        ),
        ("caio", "Caio Reis", json!({"origin": "organic"})),
    ];
    for (key, label, extra) in &leads {
        let mut body = json!({"leadKey": key, "changeId": format!("new-{key}"), "occurredAt": now, "label": label, "meta": meta(key)});
        if let (Some(b), Some(more)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(more.clone());
        }
        let answer = c
            .call(Method::POST, "/v1/sites/loja-x/leads", Some(body))
            .await?;
        println!("  lead {label:<10} recorded: queued {}", answer["queued"]);
    }
    for (key, change, body) in [
        ("ana", "m1", json!({"column": "agendado"})),
        (
            "ana",
            "m2",
            json!({"stage": "won", "revenueCents": 45_990, "column": "fechado"}),
        ),
        ("bia", "m3", json!({"column": "qualificado"})),
        ("bia", "m3", json!({"column": "qualificado"})),
    ] {
        let mut body = body;
        body["changeId"] = json!(change);
        body["occurredAt"] = json!(now);
        body["meta"] = meta(key);
        let answer = c
            .call(
                Method::POST,
                &format!("/v1/sites/loja-x/leads/{key}/stage"),
                Some(body),
            )
            .await?;
        println!(
            "  {key:<4} change {change}: queued {}{}",
            answer["queued"],
            if answer["duplicate"] == true {
                " (the same change again: nothing)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Meta fails once, the sender retries a minute later; the history and
/// the counters.
async fn sends(app: &App, c: &Client) -> Result<(), Error> {
    use reqwest::Method;
    let runner = app.runner();
    // Meta fails the first request: the sender retries a minute later.
    if let Some(fake) = &app.fake {
        fake.tune(|k| k.fail_5xx = 1);
    }
    runner.drain().await?;
    let status = c
        .call(Method::GET, "/v1/meta/status?siteIds=loja-x", None)
        .await?;
    println!(
        "  Meta answered 503: {} pending, retried in a minute (1, then 10, three attempts in all)",
        status["sites"][0]["conversions"]["pending"]
    );
    runner.advance(MINUTE_MS).await?;
    runner.drain().await?;
    let now = runner.now();
    let list = c
        .call(Method::GET, "/v1/sites/loja-x/conversions", None)
        .await?;
    for conv in list["conversions"].as_array().into_iter().flatten() {
        println!(
            "    {:<14} {:<10} {:<28} {:>14}  {} (attempts {})",
            conv["eventName"].as_str().unwrap_or(""),
            conv["leadLabel"].as_str().unwrap_or(""),
            conv["adName"].as_str().unwrap_or("organic"),
            money(&conv["valueCents"], "BRL"),
            conv["status"].as_str().unwrap_or(""),
            conv["attempts"]
        );
    }
    let status = c
        .call(
            Method::GET,
            &format!("/v1/meta/status?siteIds=loja-x&now={now}"),
            None,
        )
        .await?;
    let counts = &status["sites"][0]["conversions"];
    println!(
        "  counters: {} sent, {} pending, {} failed; today {}; last 30 days {}",
        counts["sent"], counts["pending"], counts["failed"], counts["sentToday"], counts["last30d"]
    );
    Ok(())
}
