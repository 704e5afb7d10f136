//! Scale: 100, 1,000 and 10,000 linked ad accounts (written straight to
//! the table, no Meta needed), ten of them due, five in `due` and five at
//! the slots the tick's walk reads; what one dispatcher tick and
//! one sweeper tick cost, in DynamoDB requests and wall time, per tick and
//! per due account: a tick's cost must follow the accounts due, not the
//! accounts linked (beside each, what moto alone takes for one request at
//! that size: its wall time grows with the table, DynamoDB's does not).
//! And the time from a lead change to Meta's receipt of
//! its event, through the send queue's batching window on a real clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adtrail_domain::links::Cadence;
use adtrail_domain::plan::SyncInterval;
use adtrail_domain::time::{Clock, DAY_MS, SystemClock, VirtualClock};
use adtrail_local::OffsetClock;
use adtrail_local::app::start;
use adtrail_store::keys::{
    CURSOR_SK, DISPATCH_PK, DUE_INDEX, DUE_SHARD, DUE_SHARDS, GSI1_PK, GSI1_SK, NEXT_SYNC_AT, PK,
    SK, due_shard, due_shard_n, link_sk, owner_link_sk, owner_pk, site_pk, slot_shard,
};
use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use serde_json::json;

use crate::{Error, T0};

/// Accounts due at each size.
const DUE: usize = 10;
/// The cycle the seeded links keep: the default interval's.
const CYCLE: i64 = SyncInterval::DEFAULT.ms();

/// `n` links of 20 sites (as many as a site may have), as a running stack
/// holds them: most at their slots of the 45-minute cycle, spread over it
/// and due later; of the `due` due now, half in `due` (a sync asked for, a
/// back-off's end) and half at slots that came since the last tick; the
/// dispatcher's cursor a minute back. Written in batches of 25.
pub(crate) async fn seed_links(
    store: &adtrail_store::Store,
    n: usize,
    due: usize,
    now: i64,
) -> Result<(), Error> {
    let s = |v: String| AttributeValue::S(v);
    let items: Vec<WriteRequest> = (0..n)
        .map(|i| {
            let site = format!("scale-{}", i / 20);
            let account = format!("act_{:012}", 900_000_000 + i);
            // Slots of the cycle after the last minute, spread over it.
            let spread = 60_000 + (i as i64 * 7_919_000) % (CYCLE - 120_000);
            let (schedule, next) = if i < due / 2 {
                ("due", now)
            } else if i < due {
                ("slot", now - 30_000)
            } else {
                ("slot", now + spread)
            };
            let mut item: Vec<(&str, AttributeValue)> = match schedule {
                "due" => vec![
                    ("dueShard", s(due_shard(&site, &account))),
                    ("nextSyncAt", AttributeValue::N(next.to_string())),
                ],
                _ => vec![
                    ("slotShard", s(slot_shard(Cadence::Interval).to_owned())),
                    (
                        "slot",
                        AttributeValue::N(next.rem_euclid(CYCLE).to_string()),
                    ),
                    ("slotAt", AttributeValue::N(next.to_string())),
                ],
            };
            item.extend([
                (PK, s(site_pk(&site))),
                (SK, s(link_sk(&account))),
                ("siteId", s(site.clone())),
                ("adAccountId", s(account.clone())),
                ("ownerKey", s("agency".into())),
                ("name", s(format!("Account {i}"))),
                ("currency", s("BRL".into())),
                ("timezone", s("America/Sao_Paulo".into())),
                ("syncState", s("live".into())),
                (GSI1_PK, s(owner_pk("agency"))),
                (GSI1_SK, s(owner_link_sk(&site, &account))),
                ("lastSyncAt", AttributeValue::N((now - DAY_MS).to_string())),
                (
                    "createdAt",
                    AttributeValue::N((now - 30 * DAY_MS).to_string()),
                ),
            ]);
            let item = item.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            WriteRequest::builder()
                .put_request(
                    PutRequest::builder()
                        .set_item(Some(item))
                        .build()
                        .expect("item"),
                )
                .build()
        })
        .collect();
    let back = AttributeValue::N((now - 60_000).to_string());
    store
        .ddb
        .put_item()
        .table_name(&store.names.table)
        .item(PK, s(DISPATCH_PK.into()))
        .item(SK, s(CURSOR_SK.into()))
        .item("interval", back.clone())
        .item("quiet", back)
        .send()
        .await?;
    for chunk in items.chunks(25) {
        let mut pending = chunk.to_vec();
        while !pending.is_empty() {
            let out = store
                .ddb
                .batch_write_item()
                .request_items(&store.names.table, pending)
                .send()
                .await?;
            pending = out
                .unprocessed_items
                .and_then(|mut m| m.remove(&store.names.table))
                .unwrap_or_default();
        }
    }
    Ok(())
}

/// One size: the dispatcher's tick and the sweeper's.
async fn at_size(n: usize) -> Result<(), Error> {
    let clock = VirtualClock::starting_at(T0);
    let prefix = format!("bscale-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let app = start("127.0.0.1:0".parse()?, Arc::new(clock), &prefix).await?;
    let runner = app.runner();
    let store = &runner.stack.store;
    seed_links(store, n, DUE, runner.now()).await?;
    store.counter.reset();
    let started = Instant::now();
    let dispatched = runner.dispatch().await?;
    let dispatch_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let dispatch_ddb = store.counter.get("dynamodb");
    store.counter.reset();
    let started = Instant::now();
    runner.sweep().await?;
    let sweep_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let sweep_ddb = store.counter.get("dynamodb");
    let leased = dispatched.leased.max(1) as f64;
    let (query_ms, get_ms) = emulator_alone(store).await?;
    println!(
        "scale {n:>6} linked, {} due | dispatcher tick: dynamodb requests {dispatch_ddb:>3} ({:.1} per due account), {dispatch_ms:>6.0} ms | sweeper tick: dynamodb requests {sweep_ddb:>3}, {sweep_ms:>6.0} ms | moto alone: an index query that finds nothing {query_ms:>4.0} ms, a get {get_ms:>3.0} ms",
        dispatched.leased,
        dispatch_ddb as f64 / leased,
    );
    Ok(())
}

/// What the emulator alone takes for one request at the table's size: an
/// index query of a partition nothing is in, and a get of a key nothing
/// has (medians of 5). moto reads every item of the table to answer an
/// index query, so a tick's wall time grows with the accounts linked on
/// moto while its requests do not; DynamoDB reads only the partition.
async fn emulator_alone(store: &adtrail_store::Store) -> Result<(f64, f64), Error> {
    let (mut queries, mut gets) = (vec![], vec![]);
    for _ in 0..5 {
        let started = Instant::now();
        store
            .ddb
            .query()
            .table_name(&store.names.table)
            .index_name(DUE_INDEX)
            .key_condition_expression("#s = :s AND #t <= :t")
            .expression_attribute_names("#s", DUE_SHARD)
            .expression_attribute_names("#t", NEXT_SYNC_AT)
            // One past the last shard: nothing is ever in it.
            .expression_attribute_values(":s", AttributeValue::S(due_shard_n(DUE_SHARDS)))
            .expression_attribute_values(":t", AttributeValue::N(i64::MAX.to_string()))
            .send()
            .await?;
        queries.push(started.elapsed().as_secs_f64() * 1_000.0);
        let started = Instant::now();
        store
            .ddb
            .get_item()
            .table_name(&store.names.table)
            .key(PK, AttributeValue::S("none".into()))
            .key(SK, AttributeValue::S("none".into()))
            .send()
            .await?;
        gets.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    Ok((crate::median(queries), crate::median(gets)))
}

/// The send queue's batching window, as the template sets it.
fn send_window_ms(app: &adtrail_local::app::App) -> i64 {
    app.runner()
        .stack
        .queues
        .iter()
        .find(|q| {
            q.consumer
                .as_ref()
                .is_some_and(|(f, _)| f == "CapiSenderFunction")
        })
        .map_or(0, |q| q.batching_window_ms)
}

/// From a lead change (`POST /leads`) to Meta's receipt of its event, on
/// a real clock, with the pollers running as the mappings do (the send
/// queue's batching window from the template).
pub(crate) async fn lead_to_meta() -> Result<(), Error> {
    let app = start(
        "127.0.0.1:0".parse()?,
        Arc::new(OffsetClock::default()),
        &format!("blat-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
    )
    .await?;
    let fake = app.fake.clone().ok_or("the bench needs the fake Meta")?;
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, body: serde_json::Value| {
        http.request(method, format!("{}{path}", app.api_url))
            .bearer_auth(app.host_token())
            .json(&body)
            .send()
    };
    for (path, body) in crate::pixel_site() {
        call(reqwest::Method::PUT, path, body)
            .await?
            .error_for_status()?;
    }
    let window_ms = send_window_ms(&app);
    let mut samples = vec![];
    for i in 0..5 {
        let hash = adtrail_domain::contact::sha256_hex(&format!("551198765{i:04}"));
        let started = Instant::now();
        call(
            reqwest::Method::POST,
            "/v1/sites/loja-x/leads",
            json!({"leadKey": format!("lat-{i}"), "changeId": format!("lat-{i}"),
                "occurredAt": SystemClock.now_ms(), "origin": "organic", "meta": {"ph": [hash]}}),
        )
        .await?
        .error_for_status()?;
        let before = fake.accepted_events().len();
        while fake.accepted_events().len() == before {
            app.runner().poll().await?;
            if started.elapsed() > Duration::from_secs(60) {
                return Err("the event did not reach Meta within a minute".into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        samples.push(started.elapsed().as_secs_f64() * 1_000.0);
    }
    let median = crate::median(samples);
    println!(
        "latency lead change -> Meta receipt: {median:.0} ms (median of 5, real clock; the send queue's batching window {window_ms} ms, goal <= window + 2,000 ms: {})",
        if median <= window_ms as f64 + 2_000.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

pub(crate) async fn scale_bench() -> Result<(), Error> {
    for n in [100, 1_000, 10_000] {
        at_size(n).await?;
    }
    lead_to_meta().await
}
