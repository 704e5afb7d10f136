//! The demo's last part: a closed shop, Loja Fechada, is erased: gone at
//! once for every route, the rest of what it had deleted by the sweeper in
//! batches, until nothing of it is left.

use adtrail_domain::time::MINUTE_MS;
use adtrail_local::app::App;
use reqwest::Method;
use serde_json::json;

use super::{Client, Error};

pub(super) async fn erase(app: &App, c: &Client) -> Result<(), Error> {
    println!("\nerasing a site: Loja Fechada closed");
    c.call(
        Method::PUT,
        "/v1/sites/loja-fechada",
        Some(json!({"name": "Loja Fechada", "currency": "BRL", "country": "BR"})),
    )
    .await?;
    let runner = app.runner();
    for i in 0..3 {
        c.call(
            Method::POST,
            "/v1/sites/loja-fechada/leads",
            Some(
                json!({"leadKey": format!("cliente-{i}"), "changeId": format!("fechada-{i}"),
                "occurredAt": runner.now(), "origin": "organic"}),
            ),
        )
        .await?;
    }
    let started = c
        .call(Method::DELETE, "/v1/sites/loja-fechada", None)
        .await?;
    println!(
        "  DELETE /v1/sites/loja-fechada: erasing {} (the site is gone at once for every route)",
        started["erasing"]
    );
    for _ in 0..10 {
        let swept = runner.sweep().await?;
        if swept.erasures_done > 0 {
            break;
        }
        runner.advance(5 * MINUTE_MS).await?;
    }
    let gone = c
        .http
        .delete(format!("{}/v1/sites/loja-fechada", c.base))
        .bearer_auth(&c.token)
        .send()
        .await?
        .status();
    println!("  the sweeper deleted its leads, counters and markers; asked again: {gone}");
    Ok(())
}
