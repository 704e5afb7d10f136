//! The forms list of a busy Page: each form's last 30 days are counted
//! from its day counters (written in the same transaction as each lead)
//! and its newest lead, not read lead by lead, so the list costs the same
//! for a form of 600 long leads as for an idle one.

use adtrail_domain::time::{DAY_MS, utc_day};
use adtrail_fake_meta::SAMPLE_FORMS;
use adtrail_tests::*;
use futures::{StreamExt, TryStreamExt};

use super::{LOJA_PAGE, link_loja_page};

/// 600 leads of 10 KB over the last ten days (6 MB): the list's counts
/// are exact, and it reads a few units of DynamoDB where reading the
/// leads themselves took hundreds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_forms_30_days_are_counted_not_read() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    link_loja_page(&h).await;
    let now = h.now();
    let store = h.store();
    // Sixty a day, on each of the last ten days.
    let at = |i: i64| now - (i % 10) * DAY_MS - (i / 10) * 60_000;
    futures::stream::iter(0..600)
        .map(|i| async move {
            let lead = long_form_lead(SAMPLE_FORMS[0].0, format!("8{i:014}"), at(i));
            store.forms().record_form_lead(&lead).await
        })
        .buffer_unordered(8)
        .try_collect::<Vec<_>>()
        .await
        .expect("the leads are kept");

    let counter = &h.runner().api.store.counter;
    counter.reset();
    let path = format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms");
    let listed = h.expect(200, "GET", &path, None).await;
    let read_units = counter.read_units();
    let form = listed["forms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["formId"] == SAMPLE_FORMS[0].0)
        .expect("the busy form");
    assert_eq!(form["leads30d"], 600);
    assert_eq!(form["partial"], false);
    assert_eq!(form["lastLeadAt"], now);
    let daily = form["daily"].as_array().unwrap();
    assert_eq!(daily[29]["dayStart"], utc_day(now));
    let per_day: Vec<i64> = daily.iter().map(|d| d["leads"].as_i64().unwrap()).collect();
    assert_eq!(per_day[..20], [0; 20]);
    assert_eq!(per_day[20..], [60; 10]);
    assert!(read_units < 20.0, "{read_units} read units");
}
