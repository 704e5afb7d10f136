//! The fault run to three destinations: storefront events posted through
//! the API to Loja X's Meta pixel, a TikTok destination (whole requests
//! refused for one event) and a Pinterest one (answers per event), every
//! platform failing 30% of its calls at random (outages, throttles,
//! timeouts that take nothing, and requests taken whose answer never
//! comes), two senders draining at once, 5% of DynamoDB requests failing,
//! and a tenth of the batches posted twice. `ADTRAIL_FAULT_EVENTS` sets the
//! number of events (`make test` runs 600, `make fault-run` 2,000; moto
//! slows as its table grows, so 10,000 does not finish in reasonable time).
//!
//! Every row must end sent or failed as the rules say, none failed once
//! its platform took it; a platform may hold an event twice only where the
//! sender could not know it took it (the row is marked unsure and went
//! again with the same id); each platform holds exactly the sent rows of
//! its destination; replays queue nothing; and each destination's counters
//! equal a recount from the rows.

use std::collections::{BTreeMap, HashMap, HashSet};

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::time::MINUTE_MS;
use adtrail_fake_meta::RandomFaults;
use adtrail_fake_platforms::{Faults, Knobs, PINTEREST_TOKEN, TIKTOK_TOKEN};
use adtrail_tests::capi::*;
use adtrail_tests::*;
use futures::StreamExt;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posted_events_to_three_destinations_through_faults() {
    let total: usize = std::env::var("ADTRAIL_FAULT_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    // The fakes' timeouts hang 1.5 s; this stack's clients give up at 1 s.
    let started_h = Harness::start_impatient(std::time::Duration::from_secs(1)).await;
    let h = &started_h;
    let started = std::time::Instant::now();
    loja_with_a_tiktok_and_a_pinterest_destination(h).await;
    post_every_event_a_tenth_twice(h, total).await;
    let setup = started.elapsed();
    drain_through_faults(h, started).await;
    let all = rows(h, "loja-x").await;
    assert_eq!(all.len(), total * 3);
    assert!(
        all.iter().all(|r| r.status != ConversionStatus::Pending),
        "nothing is left pending"
    );
    let (recount, twice) = each_platform_holds_exactly_the_sent_rows(h, &all);
    // The faults did make sends go again: rows sent after a first attempt,
    // by destination.
    let mut retried: BTreeMap<&str, usize> = BTreeMap::new();
    for r in all
        .iter()
        .filter(|r| r.status == ConversionStatus::Sent && r.attempts > 1)
    {
        *retried
            .entry(r.destination.as_deref().unwrap_or("meta"))
            .or_default() += 1;
    }
    assert!(
        retried.keys().any(|slug| *slug != "meta"),
        "the platforms' faults made some sends go again: {retried:?}"
    );
    // Each destination's counters equal the recount.
    let st = h
        .expect(200, "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    for (slug, (sent, failed)) in &recount {
        let c = &st["sites"][0]["conversions"]["destinations"][slug.as_str()];
        assert_eq!(
            (
                c["pending"].as_i64(),
                c["sent"].as_i64(),
                c["failed"].as_i64()
            ),
            (Some(0), Some(*sent), Some(*failed)),
            "{slug}: {c}"
        );
    }
    println!(
        "fault run (platforms): {total} events to 3 destinations, sent/failed {recount:?}, sent after a first attempt {retried:?}, {twice} taken twice (unsure rows only), {} platform requests, {} Meta requests; setup {setup:?}, total {:?}",
        h.platforms().requests(),
        h.fake()
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/events"))
            .count(),
        started.elapsed()
    );
}

async fn loja_with_a_tiktok_and_a_pinterest_destination(h: &Harness) {
    loja_with_pixel(h).await;
    for body in [
        json!({"platform": "tiktok", "pixelCode": "C4FAULTRUN", "credentials": {"accessToken": TIKTOK_TOKEN}}),
        json!({"platform": "pinterest", "adAccountId": "549755885175", "credentials": {"accessToken": PINTEREST_TOKEN}}),
    ] {
        let slug = body["platform"].as_str().unwrap().to_owned();
        h.expect(
            201,
            "PUT",
            &format!("/v1/sites/loja-x/destinations/{slug}"),
            Some(body),
        )
        .await;
    }
}

/// Posted in batches of 100, two at once; a tenth of them twice. Two, not
/// more: each batch is 300 conditional puts (three destinations), which
/// moto serializes at tens of milliseconds each beside the other fault
/// run, so more at once only stretch each request toward API Gateway's
/// 30 s, which the local API enforces (in AWS each runs in its own
/// Lambda against a DynamoDB that takes them in parallel).
async fn post_every_event_a_tenth_twice(h: &Harness, total: usize) {
    let now = h.now();
    let batches: Vec<Value> = (0..total)
        .map(|i| purchase(&format!("f-{i}"), now))
        .collect::<Vec<_>>()
        .chunks(100)
        .map(|c| json!({"events": c}))
        .collect();
    let answers: Vec<Value> = futures::stream::iter(batches.iter().enumerate())
        .map(|(i, b)| async move {
            let first = h
                .expect(202, "POST", "/v1/sites/loja-x/events", Some(b.clone()))
                .await;
            if i % 10 == 0 {
                let again = h
                    .expect(202, "POST", "/v1/sites/loja-x/events", Some(b.clone()))
                    .await;
                assert_eq!(again["queued"], 0, "a replayed batch queues nothing");
            }
            first
        })
        .buffer_unordered(2)
        .collect()
        .await;
    let queued: i64 = answers.iter().map(|a| a["queued"].as_i64().unwrap()).sum();
    assert_eq!(
        queued as usize,
        total * 3,
        "every event for every destination, once"
    );
}

/// Every platform failing 30% of its calls, the first platform request
/// taken and left unanswered; two senders drain at once, round after round
/// with the sweeper between, until nothing is pending.
async fn drain_through_faults(h: &Harness, started: std::time::Instant) {
    h.fake().tune(|k| {
        k.random_faults = Some(RandomFaults {
            pct: 30,
            seed: 20_261_201,
            timeout_ms: 1_500,
            accept_then_timeout: true,
            only_path: Some("/events".into()),
        })
    });
    // The first platform request is also taken and left unanswered, so at
    // least one batch must go again whatever the random draws.
    h.platforms().set_knobs(Knobs {
        random_faults: Some(Faults {
            pct: 30,
            seed: 20_261_201,
            timeout_ms: 1_500,
        }),
        accept_then_timeout: 1,
        ..Knobs::default()
    });
    for round in 0..80 {
        let (first, second) = tokio::join!(h.runner().drain(), h.runner().drain());
        let drained = (first.expect("drain"), second.expect("drain"));
        println!(
            "fault run (platforms): round {round}: {drained:?} at {:?}",
            started.elapsed()
        );
        let pending = h
            .store()
            .conversions()
            .conversion_counts("loja-x", None)
            .await
            .expect("counts")
            .pending;
        if pending == 0 {
            println!("fault run (platforms): settled after {round} rounds");
            break;
        }
        h.runner().advance(5 * MINUTE_MS).await.expect("advance");
        h.runner().sweep().await.expect("sweep");
    }
}

/// What each platform holds, by destination slug: exactly the sent rows,
/// twice only for unsure rows; each failure one the faults explain.
/// Answers the sent and failed rows by slug, and how many were taken twice.
fn each_platform_holds_exactly_the_sent_rows(
    h: &Harness,
    all: &[adtrail_domain::capi::Conversion],
) -> (BTreeMap<String, (i64, i64)>, usize) {
    let mut taken: HashMap<&str, Vec<String>> = HashMap::new();
    taken.insert(
        "meta",
        h.fake()
            .accepted_events()
            .into_iter()
            .map(|e| e.event_id)
            .collect(),
    );
    for a in h.platforms().accepted() {
        taken.entry(a.platform).or_default().push(a.event_id);
    }
    let mut recount: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut twice = 0;
    for slug in ["meta", "tiktok", "pinterest"] {
        let ids = taken.get(slug).cloned().unwrap_or_default();
        let mut seen = HashSet::new();
        let again: HashSet<&String> = ids.iter().filter(|id| !seen.insert(*id)).collect();
        twice += ids.len() - seen.len();
        let mine: Vec<_> = all
            .iter()
            .filter(|r| r.destination.as_deref().unwrap_or("meta") == slug)
            .collect();
        let mut sent = HashSet::new();
        for r in &mine {
            assert!(r.hashes.is_none(), "hashes erased once delivery ended");
            if again.contains(&r.event_id) {
                assert!(
                    r.unsure,
                    "{slug}: taken twice without a reason to be unsure: {r:?}"
                );
            }
            let e = recount.entry(slug.to_owned()).or_default();
            match r.status {
                ConversionStatus::Sent => {
                    e.0 += 1;
                    sent.insert(r.event_id.clone());
                }
                ConversionStatus::Failed => {
                    e.1 += 1;
                    let err = r.last_error.as_deref().unwrap_or("");
                    let code = err.split(':').next().unwrap_or("");
                    assert!(
                        ["META_UNAVAILABLE", "PLATFORM_UNAVAILABLE", "UNEXPECTED"].contains(&code),
                        "{slug}: a failure the faults explain: {err}"
                    );
                    assert!(
                        !seen.contains(&r.event_id),
                        "{slug}: failed once taken: {r:?}"
                    );
                }
                ConversionStatus::Pending => unreachable!(),
            }
        }
        let held: HashSet<String> = seen.into_iter().cloned().collect();
        assert_eq!(held, sent, "{slug} holds exactly the sent rows");
    }
    (recount, twice)
}
