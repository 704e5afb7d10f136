//! Reads that meet DynamoDB's 1 MB page, against moto, which ends a
//! query's page at 1 MB as DynamoDB does, whatever its `Limit`. A listing
//! asked for 500 of a long form's leads, the forms report's read of them,
//! and a range of days of a site's counters, each hold more than a page:
//! every item is read, and a list offers its next page (a read its
//! "partial" flag) only when there is one.

use std::collections::BTreeMap;

use adtrail_domain::capi::EventName;
use adtrail_domain::leadads::FormLeadRecord;
use adtrail_store::attr::{n, s};
use adtrail_store::keys::{COUNT_TOTAL_SK, count_day_sk, count_pk};
use adtrail_tests::*;
use futures::{StreamExt, TryStreamExt};

const DAY_MS: i64 = 86_400_000;

/// The `i`th lead of a long form (no form named: `unknown`), a second
/// after the one before.
fn long_form_lead(i: i64, at: i64) -> FormLeadRecord {
    adtrail_tests::long_form_lead("unknown", format!("9{i:014}"), at + i * 1_000)
}

/// 600 leads of 10 KB (6 MB): the first list of 500 takes six pages of
/// DynamoDB's, and still holds 500 and a cursor; the next, the last 100.
/// The report's read of at most 500 of them gets 500 and says there are
/// more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_of_long_form_leads_is_whole_past_a_page() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let at = h.now() - DAY_MS;
    let store = h.store();
    futures::stream::iter(0..600)
        .map(|i| async move { store.forms().record_form_lead(&long_form_lead(i, at)).await })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await
        .expect("the leads are kept");

    let first = h
        .expect(200, "GET", "/v1/sites/loja-x/form-leads?limit=500", None)
        .await;
    let listed = first["formLeads"].as_array().unwrap();
    assert_eq!(listed.len(), 500);
    assert_eq!(listed[499]["leadgenId"], format!("9{:014}", 499));
    let next = first["next"].as_str().expect("a next page");
    let rest = h
        .expect(
            200,
            "GET",
            &format!(
                "/v1/sites/loja-x/form-leads?limit=500&after={}",
                next.replace('#', "%23")
            ),
            None,
        )
        .await;
    let listed = rest["formLeads"].as_array().unwrap();
    assert_eq!(listed.len(), 100);
    assert_eq!(listed[0]["leadgenId"], format!("9{:014}", 500));
    assert!(rest["next"].is_null(), "{}", rest["next"]);

    let (read, partial) = store
        .forms()
        .form_leads("loja-x", "unknown", at, at + 600_000, 500)
        .await
        .unwrap();
    assert_eq!((read.len(), partial), (500, true));
}

/// A destination's slug of 120 characters: twenty of them fill a day's
/// counters to 2.6 KB.
fn long_slug(d: usize) -> String {
    format!("dest-{d:02}-{}", "x".repeat(112))
}

/// 500 days of one shard's counters, 2.6 KB each (1.3 MB), and its total
/// after them: the counts hold every day and the total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_range_of_counters_is_read_whole() {
    let h = Harness::start().await;
    let first_day = 19_000 * DAY_MS;
    let store = h.store();
    let put_day = |day: i64| async move {
        // A day's item: its events Meta accepted, and what each of many
        // destinations queued.
        let mut put = store
            .ddb
            .put_item()
            .table_name(&store.names.table)
            .item("pk", s(count_pk("loja-x", 0)))
            .item("sk", s(count_day_sk(first_day + day * DAY_MS)))
            .item(EventName::Lead.as_str(), n(1));
        for d in 0..20 {
            put = put.item(format!("{}|queued|Lead", long_slug(d)), n(1));
        }
        put.send().await.map(|_| ())
    };
    futures::stream::iter(0..500)
        .map(put_day)
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await
        .expect("the days are written");
    store
        .ddb
        .put_item()
        .table_name(&store.names.table)
        .item("pk", s(count_pk("loja-x", 0)))
        .item("sk", s(COUNT_TOTAL_SK))
        .item("pending", n(7))
        .item("sent", n(493))
        .send()
        .await
        .expect("the total is written");

    let counts = store
        .conversions()
        .conversion_counts("loja-x", Some(first_day))
        .await
        .unwrap();
    assert_eq!(
        (counts.pending, counts.sent),
        (7, 493),
        "the total, after the days"
    );
    assert_eq!(counts.days.len(), 500);
    let metrics = store
        .conversions()
        .destination_metrics(
            "loja-x",
            &long_slug(19),
            first_day,
            first_day + 499 * DAY_MS,
        )
        .await
        .unwrap();
    let queued: i64 = metrics
        .values()
        .flat_map(BTreeMap::values)
        .map(|f| f.queued)
        .sum();
    assert_eq!((metrics.len(), queued), (500, 500));
}
