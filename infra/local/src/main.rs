//! `adtrail-local serve` (`make local`) keeps the local stack running;
//! `adtrail-local demo` (`make demo`) runs the scenario and exits;
//! `adtrail-local contract` serves the demo's data for the contract test.

use std::sync::Arc;
use std::time::Duration;

use adtrail_domain::time::{Clock, SystemClock, VirtualClock};
use adtrail_local::OffsetClock;
use adtrail_local::app::start;

mod demo;

#[tokio::main]
async fn main() -> Result<(), Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUST_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let prefix = format!("local-{}", SystemClock.now_ms());
    match std::env::args().nth(1).as_deref() {
        Some("demo") => {
            let clock = Arc::new(VirtualClock::starting_at(SystemClock.now_ms()));
            let app = start("127.0.0.1:0".parse()?, clock, &prefix).await?;
            demo::run(&app).await
        }
        // The stack the contract test (schemathesis) runs against: the
        // demo's data (so the examples in the OpenAPI document hit real
        // sites, accounts and leads), then the API served until stdin
        // closes. Prints `READY <url> <host token>` once seeded.
        Some("contract") => {
            let clock = Arc::new(VirtualClock::starting_at(SystemClock.now_ms()));
            let app = start("127.0.0.1:0".parse()?, clock, &prefix).await?;
            demo::run(&app).await?;
            println!("READY {} {}", app.api_url, app.host_token());
            let mut line = String::new();
            // Blocks until the caller closes stdin (or exits).
            tokio::task::spawn_blocking(move || std::io::stdin().read_line(&mut line)).await??;
            Ok(())
        }
        Some("serve") | None => serve(&prefix).await,
        Some(other) => Err(format!("unknown command {other}: use serve, demo or contract").into()),
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// `make local`: the stack kept running, with its schedules, until Ctrl-C.
async fn serve(prefix: &str) -> Result<(), Error> {
    let addr = std::env::var("ADTRAIL_LOCAL_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".into());
    let app = start(addr.parse()?, Arc::new(OffsetClock::default()), prefix).await?;
    println!("adtrail local stack");
    println!("  API:       {}", app.api_url);
    println!("  AWS (moto): {}", app.moto.url);
    match &app.fake {
        Some(fake) => println!("  Meta:      {} (the fake sample agency)", fake.url()),
        None => println!(
            "  Meta:      {}",
            std::env::var("META_GRAPH_URL").unwrap_or_default()
        ),
    }
    println!(
        "  admin:     POST /_local/tick, POST /_local/clock {{\"advanceMs\":N}}, POST /_local/token {{\"sub\",\"scope\",\"sites\"}}"
    );
    // `sam local` runs the functions against this stack.
    std::fs::create_dir_all(".local")?;
    std::fs::write(
        ".local/sam-env.json",
        serde_json::to_string_pretty(&adtrail_local::sam_env::env_vars(&app))?,
    )?;
    println!(
        "  sam local: sam build && sam local start-api --env-vars .local/sam-env.json --parameter-overrides LocalEndpointUrl={} (start with ADTRAIL_BIND_HOST=0.0.0.0 so containers reach moto)",
        adtrail_local::sam_env::endpoint(&app)
    );
    println!("\nexport TOKEN={}", app.host_token());
    // The schedules: the dispatcher every minute, the sweeper every
    // five, each followed by draining the queues.
    let mut minute = 0u64;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(Duration::from_secs(60)) => {}
        }
        minute += 1;
        let runner = app.runner();
        let result = async {
            runner.dispatch().await?;
            if minute.is_multiple_of(5) {
                runner.sweep().await?;
            }
            runner.drain().await
        }
        .await;
        if let Err(e) = result {
            eprintln!("schedule failed: {e}");
        }
    }
}
