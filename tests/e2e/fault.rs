//! The fault run: 10,000 conversions (`ADTRAIL_FAULT_RUN` sets another
//! count; `make test` runs 2,000, `make fault-run` the full 10,000, since
//! moto spends about 20 ms on each item a transaction writes), a fifth of
//! them posted one a request (written uncounted, counted by the sender),
//! across three pixel groups, the fake Meta failing 30% of its calls
//! at random (5xx, throttles, timeouts that accept nothing, and requests
//! accepted whose answer never comes), two senders draining at once, a
//! sender dying between Meta's answer and its write, 5% of
//! DynamoDB requests failing (`make test` sets it), SQS handing
//! duplicates (in the same batch and later), and a tenth of the messages
//! lost between the outbox write and the queue. The runner, the sender and
//! the sweeper run on the virtual clock until nothing is pending.
//!
//! Every conversion must end sent or failed as the rules say, none failed
//! once Meta took it, an event may reach Meta twice only where the sender
//! could not know Meta took it (an answer that never came, a sender that
//! died before its write: the row is marked unsure and sent again with the
//! same `event_id`), and
//! the status counters (each day's queued among them) must equal a recount
//! from the rows. The counts and the requests to Meta are printed.

use std::collections::{BTreeMap, HashMap, HashSet};

use adtrail_domain::capi::ConversionStatus;
use adtrail_domain::capi::EventName;
use adtrail_domain::leads::LeadWrite;
use adtrail_domain::time::MINUTE_MS;
use adtrail_domain::time::utc_day;
use adtrail_fake_meta::{LOJA_PIXEL, PET_PIXEL, RandomFaults};
use adtrail_local::sample;
use adtrail_store::outbox::LeadWritten;
use adtrail_store::posted::Posted;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use futures::StreamExt;
use serde_json::json;

const SITES: [&str; 3] = ["loja-x", "pet-mania", "loja-y"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_conversions_through_faults() {
    let total: usize = std::env::var("ADTRAIL_FAULT_RUN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    // `ADTRAIL_FAULT_LOG=1`: the functions' log lines on stdout, as in
    // Lambda (`RUST_LOG` picks them, e.g. `warn,adtrail_capi_sender=info`
    // for each send batch's figures and phase times). Off by default:
    // they are many, and the other tests' would join them.
    if std::env::var_os("ADTRAIL_FAULT_LOG").is_some() {
        adtrail_store::logging::init();
    }
    // The fake's timeouts hang 1.5 s; this stack's clients give up at 1 s.
    let h = Harness::start_impatient(std::time::Duration::from_secs(1)).await;
    let started = std::time::Instant::now();
    three_pixel_groups(&h).await;
    let (all, lost) = write_the_outbox(&h, total).await;
    let setup = started.elapsed();
    drain_through_faults(&h, &all, started).await;
    let (pending, rows) = pending_and_rows(&h).await;
    for r in rows
        .iter()
        .filter(|r| r.status == ConversionStatus::Pending)
    {
        println!(
            "fault run: left pending: {} {} attempts {} unsure {} uncounted {} next {:?} lease {:?} work {:?} last error {:?}",
            r.site_id,
            r.sk,
            r.attempts,
            r.unsure,
            r.uncounted,
            r.next_attempt_at.map(|t| t - h.now()),
            r.lease_until.map(|t| t - h.now()),
            r.work_at.map(|t| t - h.now()),
            r.last_error
        );
    }
    assert_eq!(pending, 0, "nothing is left pending");
    assert_eq!(rows.len(), total);
    let accepted = h.fake().accepted_events();
    // Meta received an event twice only where the sender could not know
    // Meta took it (its answer never came, or the sender died before
    // writing it down): such a row is marked unsure, sent again with the
    // same event_id, and Meta's deduplication drops the copy.
    let mut seen = HashSet::new();
    let again: HashSet<String> = accepted
        .iter()
        .filter(|e| !seen.insert(e.event_id.clone()))
        .map(|e| e.event_id.clone())
        .collect();
    let twice = accepted.len() - seen.len();
    let unanswered = h.fake().unanswered_events();
    let killed = h.runner().stack.cloud.killed_recordings();
    assert_eq!(killed, 1, "the sender died");
    for r in rows.iter().filter(|r| again.contains(&r.event_id)) {
        assert!(r.unsure, "sent twice without a reason to be unsure: {r:?}");
    }
    let (counts, by_error) = every_row_ended_as_the_rules_say(&rows, &accepted);
    let recount_today = counters_equal_a_recount(&h, &rows).await;
    let retried = rows
        .iter()
        .filter(|r| r.status == ConversionStatus::Sent && r.attempts > 1)
        .count();
    assert!(retried > 0, "the faults made some sends retry");
    let requests = h
        .fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/events"))
        .count();
    let dynamodb = h.runner().stack.cloud.report().faults;
    println!(
        "fault run: {total} conversions, {} sent, {} failed {by_error:?}, {lost} messages dropped before the queue (sent again by the sweeper or a late duplicate), {retried} sent after a first attempt, {} Meta requests ({} accepted events), {recount_today} sent today, {twice} events Meta received more than once ({unanswered} accepted and left unanswered, {killed} sender killed between its receipt and a row's end), DynamoDB faults survived {dynamodb:?}; setup {setup:?}, total {:?}",
        counts.get("sent").unwrap_or(&0),
        counts.get("failed").unwrap_or(&0),
        requests,
        accepted.len(),
        started.elapsed()
    );
}

/// Pet Mania sends with the agency's connection, Loja Y with a token of
/// its own, Loja X with its pixel: three groups.
async fn three_pixel_groups(h: &Harness) {
    loja_with_pixel(h).await;
    for (site, currency, pixel) in [
        ("pet-mania", "USD", PET_PIXEL.0),
        ("loja-y", "BRL", LOJA_PIXEL.0),
    ] {
        let (s, b) = h
            .call(
                "PUT",
                &format!("/v1/sites/{site}"),
                Some(json!({"name": site, "currency": currency, "country": "US"})),
            )
            .await;
        assert_eq!(s, 200, "{b}");
        // Pet Mania sends with the agency's connection, Loja Y with a
        // token of its own: three groups.
        let pixel_body = if site == "pet-mania" {
            json!({"pixelId": pixel, "ownerKey": "agency"})
        } else {
            json!({"pixelId": pixel, "accessToken": "EAAB-loja-y-pixel-token"})
        };
        h.expect(
            200,
            "PUT",
            &format!("/v1/sites/{site}/pixel"),
            Some(pixel_body),
        )
        .await;
    }
}

/// The outbox: four events a lead, written as the API writes them, and
/// every fifth group of four posted one a request instead (each row
/// `uncounted` until a sender ends its first attempt); the queue: a tenth
/// lost on the way, a tenth handed twice. Answers every message and how
/// many were lost.
async fn write_the_outbox(
    h: &Harness,
    total: usize,
) -> (Vec<adtrail_store::queue::SendMessage>, usize) {
    let now = h.now();
    let groups =
        (0..total.div_ceil(4)).map(|i| (i, SITES[i % SITES.len()], (total - i * 4).min(4)));
    let store = h.store();
    let written: Vec<Vec<adtrail_store::queue::SendMessage>> = futures::stream::iter(groups)
        .map(|(i, site, events)| async move {
            if i % 5 == 4 {
                let mut messages = vec![];
                for k in 0..events {
                    let row = sample::posted_row(site, "BRL", i * 4 + k, now);
                    let posted = store
                        .conversions()
                        .queue_posted(site, std::slice::from_ref(&row), now)
                        .await
                        .expect("post");
                    assert_eq!(posted, [Posted::Queued(row.sk.clone())]);
                    messages.push(adtrail_store::queue::SendMessage {
                        site_id: site.to_owned(),
                        key: row.sk,
                    });
                }
                return messages;
            }
            let w: LeadWrite = sample::lead_write(site, "BRL", i, events, now);
            assert_eq!(
                store.leads().write_lead_change(&w).await.expect("write"),
                LeadWritten::Written
            );
            sample::messages(&w)
        })
        .buffer_unordered(8)
        .collect()
        .await;
    // The queue: a tenth lost on the way, a tenth handed twice.
    let mut messages = vec![];
    let mut lost = 0;
    let mut all = vec![];
    for (i, w) in written.into_iter().enumerate() {
        for m in w {
            all.push(m.clone());
            match i % 10 {
                0 => lost += 1,
                1 => {
                    messages.push(m.clone());
                    messages.push(m);
                }
                _ => messages.push(m),
            }
        }
    }
    store
        .queues()
        .enqueue_sends(&messages)
        .await
        .expect("queue");
    (all, lost)
}

/// Two senders drain at once, round after round on the virtual clock,
/// with the sweeper between, until nothing is pending.
async fn drain_through_faults(
    h: &Harness,
    all: &[adtrail_store::queue::SendMessage],
    started: std::time::Instant,
) {
    let store = h.store();
    h.fake().tune(|k| {
        k.random_faults = Some(RandomFaults {
            pct: 30,
            seed: 20_261_130,
            timeout_ms: 1_500,
            accept_then_timeout: true,
            only_path: Some("/events".into()),
        })
    });
    h.fake().clear_requests();
    // Once, a sender dies between counting its sends and writing one on
    // its row.
    h.runner().stack.cloud.kill_recordings(1);
    let mut late_duplicates = false;
    for round in 0..80 {
        // Two senders drain at once, as Lambda scales the mapping out.
        let (first, second) = tokio::join!(h.runner().drain(), h.runner().drain());
        let drained = (first.expect("drain"), second.expect("drain"));
        println!(
            "fault run: round {round}: {drained:?} at {:?}",
            started.elapsed()
        );
        if !late_duplicates {
            // SQS hands some messages again after they were worked.
            store
                .queues()
                .enqueue_sends(&all[..all.len().min(500)])
                .await
                .expect("queue");
            late_duplicates = true;
            continue;
        }
        let pending = pending_count(h).await;
        if pending == 0 {
            println!("fault run: settled after {round} rounds");
            break;
        }
        // Retries come 1 and 10 minutes after a failure, lost sends after
        // 15 minutes: 5-minute steps reach each soon after it is due.
        h.runner().advance(5 * MINUTE_MS).await.expect("advance");
        h.runner().sweep().await.expect("sweep");
    }
}

/// Each row sent, or failed after three attempts for a reason the faults
/// explain, never once Meta took it; hashes erased; Meta holds exactly the
/// sent rows. Answers the rows by status and the failures by code.
fn every_row_ended_as_the_rules_say(
    rows: &[adtrail_domain::capi::Conversion],
    accepted: &[adtrail_fake_meta::AcceptedEvent],
) -> (BTreeMap<&'static str, usize>, BTreeMap<String, usize>) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_error: BTreeMap<String, usize> = BTreeMap::new();
    let mut sent_ids = HashSet::new();
    let mut days: HashMap<(i64, EventName), i64> = HashMap::new();
    for r in rows {
        *counts.entry(r.status.as_str()).or_default() += 1;
        assert!(r.hashes.is_none(), "hashes erased once delivery ended");
        match r.status {
            ConversionStatus::Sent => {
                sent_ids.insert(r.event_id.clone());
                *days
                    .entry((utc_day(r.sent_at.unwrap()), r.event_name))
                    .or_default() += 1;
                assert!(r.attempts <= 3 || r.unsure, "{r:?}");
            }
            ConversionStatus::Failed => {
                let e = r.last_error.as_deref().unwrap_or("");
                let code = e.split(':').next().unwrap_or("").to_owned();
                assert!(
                    ["META_UNAVAILABLE", "UNEXPECTED"].contains(&code.as_str()),
                    "a failure the faults explain: {e}"
                );
                assert_eq!(r.attempts, 3, "failed only after three attempts: {r:?}");
                assert!(
                    !accepted.iter().any(|e| e.event_id == r.event_id),
                    "never failed once Meta took it: {r:?}"
                );
                *by_error.entry(code).or_default() += 1;
            }
            ConversionStatus::Pending => unreachable!(),
        }
    }
    let accepted_ids: HashSet<String> = accepted.iter().map(|e| e.event_id.clone()).collect();
    assert_eq!(accepted_ids, sent_ids, "Meta holds exactly the sent rows");

    (counts, by_error)
}

/// The counters equal a recount from the rows, site by site: answers how
/// many went today.
async fn counters_equal_a_recount(h: &Harness, rows: &[adtrail_domain::capi::Conversion]) -> usize {
    let mut recount_today = 0;
    for site in SITES {
        let (s, status) = h
            .call(
                "GET",
                &format!("/v1/meta/status?siteIds={site}&now={}", h.now()),
                None,
            )
            .await;
        assert_eq!(s, 200, "{status}");
        let c = &status["sites"][0]["conversions"];
        let mine: Vec<_> = rows.iter().filter(|r| r.site_id == site).collect();
        let n = |st: ConversionStatus| mine.iter().filter(|r| r.status == st).count();
        assert_eq!(c["pending"], 0);
        assert_eq!(c["sent"], n(ConversionStatus::Sent), "{site}");
        assert_eq!(c["failed"], n(ConversionStatus::Failed), "{site}");
        let today = utc_day(h.now());
        let sent_today = mine
            .iter()
            .filter(|r| r.sent_at.is_some_and(|t| utc_day(t) == today))
            .count();
        assert_eq!(c["sentToday"], sent_today, "{site}");
        recount_today += sent_today;
        for e in EventName::LEAD_EVENTS {
            let want = mine
                .iter()
                .filter(|r| r.status == ConversionStatus::Sent && r.event_name == e)
                .count();
            assert_eq!(c["last30d"][e.as_str()], want, "{site} {e:?}");
        }
        // Each row counted queued once, on the day it was created, those
        // posted on their own too.
        let mut queued: BTreeMap<(i64, EventName), i64> = BTreeMap::new();
        for r in &mine {
            *queued
                .entry((utc_day(r.created_at), r.event_name))
                .or_default() += 1;
        }
        let first = queued.keys().next().map_or(today, |(day, _)| *day);
        let metrics = h
            .store()
            .conversions()
            .destination_metrics(site, "meta", first, today)
            .await
            .expect("metrics");
        let counted: BTreeMap<(i64, EventName), i64> = metrics
            .iter()
            .flat_map(|(day, events)| events.iter().map(|(e, f)| ((*day, *e), f.queued)))
            .filter(|(_, n)| *n != 0)
            .collect();
        assert_eq!(counted, queued, "{site}: queued");
    }
    recount_today
}

/// Pending conversions, from the sites' counters (cheap), and from the
/// rows once those say none: a row posted on its own is not in the
/// counters before its first attempt ends.
async fn pending_count(h: &Harness) -> usize {
    let mut pending = 0;
    for site in SITES {
        pending += h
            .store()
            .conversions()
            .conversion_counts(site, None)
            .await
            .expect("counts")
            .pending;
    }
    match usize::try_from(pending) {
        Ok(0) | Err(_) => pending_and_rows(h).await.0,
        Ok(n) => n,
    }
}

async fn pending_and_rows(h: &Harness) -> (usize, Vec<adtrail_domain::capi::Conversion>) {
    let mut all = vec![];
    for site in SITES {
        all.extend(rows(h, site).await);
    }
    let pending = all
        .iter()
        .filter(|r| r.status == ConversionStatus::Pending)
        .count();
    (pending, all)
}
