//! What each destination's reads show: metrics from counters, the
//! filtered history, meta.status, a lead's conversions.
use adtrail_fake_platforms::Knobs;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

use super::super::drain;
use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_destination_has_its_metrics_filtered_history_and_status_from_counters() {
    let started = Harness::start().await;
    let h = &started;
    with_tiktok(h).await;
    h.platforms().set_knobs(Knobs {
        reject_event_ids: vec!["o-3".into()],
        ..Knobs::default()
    });
    let now = h.now();
    let mut events: Vec<Value> = (0..5).map(|i| purchase(&format!("o-{i}"), now)).collect();
    let mut lead = purchase("l-1", now);
    lead["event"] = json!("lead");
    events.push(lead);
    post(h, events).await;
    drain(h).await;
    each_destinations_metrics_by_event_and_day(h, now).await;
    the_history_filtered_and_paged(h).await;
    status_shows_each_destinations_totals(h).await;
}

/// TikTok's metrics (one purchase refused) by event and day, beside the
/// pixel's.
async fn each_destinations_metrics_by_event_and_day(h: &Harness, now: i64) {
    let day = now - now.rem_euclid(86_400_000);
    let m = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/destinations/tiktok-br/metrics?from={day}&to={day}"),
            None,
        )
        .await;
    assert_eq!(
        m["totals"],
        json!({"queued": 6, "sent": 5, "failed": 1}),
        "{m}"
    );
    assert_eq!(
        m["byEvent"]["purchase"],
        json!({"queued": 5, "sent": 4, "failed": 1})
    );
    assert_eq!(
        m["byEvent"]["lead"],
        json!({"queued": 1, "sent": 1, "failed": 0})
    );
    assert_eq!(
        m["days"],
        json!([{"dayStart": day, "queued": 6, "sent": 5, "failed": 1}])
    );
    let pixel = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/destinations/meta/metrics?from={day}&to={day}"),
            None,
        )
        .await;
    assert_eq!(
        pixel["totals"],
        json!({"queued": 6, "sent": 6, "failed": 0})
    );
}

/// The history, filtered (TikTok's failed row only) and paged.
async fn the_history_filtered_and_paged(h: &Harness) {
    // The history, filtered: TikTok's failed row only.
    let list = h
        .expect(
            200,
            "GET",
            "/v1/sites/loja-x/conversions?destination=tiktok-br&status=failed",
            None,
        )
        .await;
    let rows = list["conversions"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(
        (rows[0]["eventId"].as_str(), rows[0]["destination"].as_str()),
        (Some("o-3"), Some("tiktok-br"))
    );
    let list = h
        .expect(
            200,
            "GET",
            "/v1/sites/loja-x/conversions?destination=meta&limit=4",
            None,
        )
        .await;
    assert_eq!(list["conversions"].as_array().unwrap().len(), 4);
    assert!(
        list["conversions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["destination"] == "meta")
    );
    let next = &list["next"];
    let more = h
        .expect(
            200,
            "GET",
            &format!(
                "/v1/sites/loja-x/conversions?destination=meta&limit=4&before={}&beforeEventId={}",
                next["before"],
                next["beforeEventId"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(
        more["conversions"].as_array().unwrap().len(),
        2,
        "the rest of the pixel's six"
    );
    let (s, _) = h
        .call("GET", "/v1/sites/loja-x/conversions?status=sent", None)
        .await;
    assert_eq!(s, 400);
}

/// `meta.status`: each destination's totals.
async fn status_shows_each_destinations_totals(h: &Harness) {
    let st = h
        .expect(200, "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(
        st["sites"][0]["conversions"]["destinations"],
        json!({"meta": {"pending": 0, "sent": 6, "failed": 0},
               "tiktok-br": {"pending": 0, "sent": 5, "failed": 1}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leads_conversions_are_listed_whatever_their_destination() {
    let h = Harness::start().await;
    loja_with_pixel(&h).await;
    schedule_ana(&h).await;
    move_to(
        &h,
        "ana",
        "c2",
        json!({"stage": "won", "revenueCents": 1000, "meta": meta_for("ana")}),
    )
    .await;
    drain(&h).await;
    let b = h
        .expect(200, "GET", "/v1/sites/loja-x/leads/ana/conversions", None)
        .await;
    let names: Vec<&str> = b["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["eventName"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{b}");
    assert!(names.contains(&"Schedule") && names.contains(&"Purchase"));
    assert!(
        b["conversions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "sent" && c["destination"] == "meta")
    );
    let (s, _) = h
        .call("GET", "/v1/sites/loja-x/leads/nobody/conversions", None)
        .await;
    assert_eq!(s, 404);
}
