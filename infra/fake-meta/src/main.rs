//! Runs the fake Graph API on its own: `adtrail-fake-meta [ADDR]`
//! (default 127.0.0.1:4010), for pointing `META_GRAPH_URL` at by hand.

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:4010".into());
    let addr = addr
        .parse()
        .map_err(|_| std::io::Error::other("ADDR must be host:port"))?;
    let fake = adtrail_fake_meta::FakeMeta::start(addr).await?;
    println!("fake Meta Graph API at {}", fake.url());
    tokio::signal::ctrl_c().await
}
