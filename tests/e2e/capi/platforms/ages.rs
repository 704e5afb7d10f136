//! Each platform's own event age: a storefront's event older than a
//! platform takes is not queued there (a warning says why), and goes to
//! those that still take it.
use adtrail_domain::time::DAY_MS;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::super::drain;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_event_goes_only_where_its_age_is_still_taken() {
    let h = Harness::start().await;
    with_google(&h, false).await;
    add_tiktok(&h, "tiktok-br", "C4LOJAX01", None).await;
    let now = h.now();
    // A shop's sale 30 days ago: Meta takes a physical store's for 62
    // days, Google up to 90, TikTok 7.
    let mut store_sale = purchase("store-1", now - 30 * DAY_MS);
    store_sale["actionSource"] = json!("physical_store");
    store_sale.as_object_mut().unwrap().remove("eventSourceUrl");
    // A website sale 10 days ago: only Google.
    let web_sale = purchase("web-1", now - 10 * DAY_MS);
    let b = post(&h, vec![store_sale, web_sale]).await;
    assert_eq!(b["events"][0]["queued"], json!(["meta", "google-ads"]));
    assert_eq!(
        b["events"][0]["warnings"],
        json!([
            "events[0].occurredAt: older than 7 days, the most TikTok takes; not sent to tiktok-br"
        ])
    );
    assert_eq!(b["events"][1]["queued"], json!(["google-ads"]));
    assert_eq!(
        b["events"][1]["warnings"],
        json!([
            "events[1].occurredAt: older than 7 days, the most Meta takes; not sent to meta",
            "events[1].occurredAt: older than 7 days, the most TikTok takes; not sent to tiktok-br"
        ])
    );
    drain(&h).await;
    let meta: Vec<String> = h
        .fake()
        .accepted_events()
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    assert_eq!(meta, ["store-1"], "Meta took the store's 30-day-old sale");
    let google = taken_ids(&h);
    assert_eq!(google, ["store-1", "web-1"]);
    assert!(
        rows(&h, "loja-x")
            .await
            .iter()
            .all(|r| r.status == adtrail_domain::capi::ConversionStatus::Sent)
    );
}
