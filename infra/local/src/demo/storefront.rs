//! The demo's last part: Loja X registers a TikTok destination beside its
//! pixel, and one storefront sale reaches both, each with its own hashes;
//! so does a sale recorded on the board.

use adtrail_local::app::App;
use reqwest::Method;
use serde_json::{Value, json};

use super::{Client, Error};

/// Loja X registers a TikTok destination; one sale from its storefront
/// reaches Meta and TikTok, each hashed the platform's own way.
pub(super) async fn storefront(app: &App, c: &Client) -> Result<(), Error> {
    println!("\nstorefront: one sale, two platforms");
    let d = c
        .call(
            Method::PUT,
            "/v1/sites/loja-x/destinations/tiktok-br",
            Some(json!({"platform": "tiktok", "pixelCode": "C4LOJAXTIKTOK",
                "credentials": {"accessToken": adtrail_fake_platforms::TIKTOK_TOKEN}})),
        )
        .await?;
    println!(
        "  destination tiktok-br: {} pixel {}, {} (its token sealed with KMS, never shown)",
        d["destination"]["platform"].as_str().unwrap_or(""),
        d["destination"]["pixelCode"].as_str().unwrap_or(""),
        d["destination"]["state"].as_str().unwrap_or("")
    );
    sale_reaches_both(app, c).await?;
    posted_again(app, c).await?;
    board_sale(app, c).await
}

/// One storefront sale, and the hashes each platform got of it.
async fn sale_reaches_both(app: &App, c: &Client) -> Result<(), Error> {
    let runner = app.runner();
    let answer = c
        .call(
            Method::POST,
            "/v1/sites/loja-x/events",
            Some(json!({"events": [{
                "eventId": "order-2001", "event": "purchase", "occurredAt": runner.now(),
                "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
                "valueCents": 45990, "currency": "BRL", "orderId": "2001",
                "contact": {"email": "ana.silva@example.com", "phone": "(11) 98765-4321",
                            "ip": "203.0.113.9", "ttclid": "E.C.P.demo"}}]})),
        )
        .await?;
    println!(
        "  POST /events: order-2001 queued for {}",
        answer["events"][0]["queued"]
    );
    runner.drain().await?;
    let short = |v: &Value| v.as_str().map(|h| format!("{}…", &h[..12.min(h.len())]));
    if let Some(fake) = &app.fake
        && let Some(e) = fake
            .accepted_events()
            .iter()
            .find(|e| e.event_id == "order-2001")
    {
        println!(
            "  Meta   got {} with phone hash {} (digits with the country code)",
            e.event_name,
            short(&e.user_data["ph"][0]).unwrap_or_default()
        );
    }
    if let Some(fakes) = &app.platforms
        && let Some(e) = fakes.accepted().iter().find(|e| e.event_id == "order-2001")
    {
        println!(
            "  TikTok got {} with phone hash {} (E.164, with its +)",
            e.event_name,
            short(&e.event["user"]["phone"]).unwrap_or_default()
        );
    }
    Ok(())
}

/// The same order posted again queues nothing.
async fn posted_again(app: &App, c: &Client) -> Result<(), Error> {
    let runner = app.runner();
    let again = c
        .call(
            Method::POST,
            "/v1/sites/loja-x/events",
            Some(json!({"events": [{
                "eventId": "order-2001", "event": "purchase", "occurredAt": runner.now(),
                "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
                "valueCents": 45990, "currency": "BRL",
                "contact": {"email": "ana.silva@example.com"}}]})),
        )
        .await?;
    println!(
        "  the same order posted again: queued {}, already had it {}",
        again["events"][0]["queued"], again["events"][0]["duplicate"]
    );
    Ok(())
}

/// A sale recorded on the board reaches both the same way.
async fn board_sale(app: &App, c: &Client) -> Result<(), Error> {
    let runner = app.runner();
    let contact = json!({"phone": "(11) 91234-5678", "email": "bruno@example.com"});
    c.call(
        Method::POST,
        "/v1/sites/loja-x/leads",
        Some(
            json!({"leadKey": "bruno", "changeId": "demo-bruno-1", "occurredAt": runner.now(),
                    "origin": "organic", "contact": contact}),
        ),
    )
    .await?;
    let sale = c
        .call(
            Method::POST,
            "/v1/sites/loja-x/leads/bruno/stage",
            Some(
                json!({"changeId": "demo-bruno-2", "occurredAt": runner.now(),
                        "stage": "won", "revenueCents": 129900, "contact": contact}),
            ),
        )
        .await?;
    println!(
        "  a lead's sale on the board: queued {} for the pixel and {} for the destinations",
        sale["queued"], sale["routed"]
    );
    Ok(())
}
