//! A report's read of one site's spend: the day sums of a site's 20
//! accounts (as many as a site may have) over 30 days that include today,
//! each account holding its two newest days on its link. Read one account
//! after another, each with its link read before and after its sum items
//! (what the reports did), and read as the site's (its links in one query
//! before and one after, the accounts' sum items eight at a time), side
//! by side in one run: DynamoDB requests and the median wall time of each,
//! with a round trip added to each request as in a region.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adtrail_domain::time::{DAY_MS, VirtualClock};
use adtrail_local::app::start;
use adtrail_store::keys::{PK, SK, day_sk, link_sk, site_pk, sum_pk};
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};

use crate::{Error, T0};

/// A site's accounts (the most a site may link) and the report's days.
const ACCOUNTS: usize = 20;
const DAYS: i64 = 30;
/// Reads of each way, alternated.
const READS: usize = 15;
/// The round trip added to each DynamoDB request (single-digit
/// milliseconds within a region).
const ROUND_TRIP_MS: u64 = 5;

/// The site the scale bench's seed puts its first 20 links at.
const SITE: &str = "scale-0";

/// Sum items for the older days and the two newest held on each link.
async fn seed_sums(store: &adtrail_store::Store, today: i64) -> Result<Vec<String>, Error> {
    let n = |v: i64| AttributeValue::N(v.to_string());
    let accounts: Vec<String> = (0..ACCOUNTS)
        .map(|i| format!("act_{:012}", 900_000_000 + i))
        .collect();
    let mut puts = vec![];
    for account in &accounts {
        for d in 2..DAYS {
            let item = [
                (PK, AttributeValue::S(sum_pk(SITE, account))),
                (SK, AttributeValue::S(day_sk(today - d * DAY_MS))),
                ("spendCents", n(1_000 + d)),
                ("impressions", n(10_000)),
                ("clicks", n(100)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            puts.push(
                WriteRequest::builder()
                    .put_request(PutRequest::builder().set_item(Some(item)).build()?)
                    .build(),
            );
        }
        let mut update = store
            .ddb
            .update_item()
            .table_name(&store.names.table)
            .key(PK, AttributeValue::S(site_pk(SITE)))
            .key(SK, AttributeValue::S(link_sk(account)))
            .update_expression("SET #s0 = :v, #i0 = :v, #c0 = :v, #s1 = :v, #i1 = :v, #c1 = :v")
            .expression_attribute_values(":v", n(500));
        for (i, day) in [today - DAY_MS, today].into_iter().enumerate() {
            for kind in ["s", "i", "c"] {
                update = update
                    .expression_attribute_names(format!("#{kind}{i}"), format!("{kind}@{day}"));
            }
        }
        update.send().await?;
    }
    for chunk in puts.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            pending = store
                .ddb
                .batch_write_item()
                .request_items(&store.names.table, pending)
                .send()
                .await?
                .unprocessed_items
                .and_then(|mut m| m.remove(&store.names.table))
                .unwrap_or_default();
        }
    }
    Ok(accounts)
}

/// Prints the two ways' requests and median wall times, and their ratio.
pub(crate) async fn site_sums_bench() -> Result<(), Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bsums-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let app = start("127.0.0.1:0".parse()?, Arc::new(clock), &prefix).await?;
    let runner = app.runner();
    let store = runner.stack.store_for("ApiFunction");
    // A request in a region is a network round trip beside DynamoDB's own
    // time; moto on this machine has only the latter, and serves one
    // request at a time.
    runner
        .stack
        .cloud
        .set_round_trip(Duration::from_millis(ROUND_TRIP_MS));
    let now = runner.now();
    crate::scale::seed_links(&runner.stack.store, ACCOUNTS, 0, now).await?;
    let today = now - now.rem_euclid(DAY_MS);
    let accounts = seed_sums(&runner.stack.store, today).await?;
    let names: Vec<&str> = accounts.iter().map(String::as_str).collect();
    let (from, to) = (today - (DAYS - 1) * DAY_MS, today);
    let spend = store.spend();
    let (mut each_ms, mut site_ms) = (vec![], vec![]);
    let (mut each_requests, mut site_requests) = (0, 0);
    let (mut each_units, mut site_units) = (0.0, 0.0);
    for i in 0..READS * 2 {
        store.counter.reset();
        let started = Instant::now();
        let days = if i % 2 == 0 {
            let mut days = 0;
            for account in &names {
                days += spend.day_sums(SITE, account, from, to).await?.len();
            }
            each_ms.push(started.elapsed().as_secs_f64() * 1_000.0);
            each_requests = store.counter.get("dynamodb");
            each_units = store.counter.read_units();
            days
        } else {
            let (sums, _) = spend
                .site_day_sums(SITE, &names, from, to, usize::MAX)
                .await?;
            site_ms.push(started.elapsed().as_secs_f64() * 1_000.0);
            site_requests = store.counter.get("dynamodb");
            site_units = store.counter.read_units();
            sums.values().map(|s| s.len()).sum()
        };
        if days != ACCOUNTS * DAYS as usize {
            return Err(format!("a read found {days} account-days").into());
        }
    }
    let (each, site) = (crate::median(each_ms), crate::median(site_ms));
    println!(
        "site spend read, {ACCOUNTS} accounts x {DAYS} days incl. today | an account at a time: dynamodb requests {each_requests} ({each_units} RRU), {each:.0} ms | the site's links in a query: dynamodb requests {site_requests} ({site_units} RRU), {site:.0} ms | {:.2}x the time (medians of {READS}, moto and a {ROUND_TRIP_MS} ms round trip a request)",
        site / each
    );
    Ok(())
}
