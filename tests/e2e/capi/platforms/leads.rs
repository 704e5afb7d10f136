//! A lead's changes reaching the site's destinations beside its pixel:
//! each platform's own hashes of the change's plain `contact`, once per
//! lead, destination and event, a replayed change queuing nothing, the
//! rows listed under the lead and removed with it.
use adtrail_domain::capi::{EventName, event_id};
use adtrail_domain::contact::sha256_hex;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::json;

use super::super::{drain, lead_id};
use super::*;

fn contact() -> serde_json::Value {
    json!({"phone": "(11) 98765-4321", "email": "Ana.Silva@Example.com"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_change_reaches_every_destination_once_with_its_own_hashes() {
    let started = Harness::start().await;
    let h = &started;
    with_tiktok(h).await;
    let lead = a_sale_is_routed_once_whatever_comes_again(h).await;
    each_platform_got_its_own_hashes(h, &lead).await;
    listed_under_the_lead_and_removed_with_it(h).await;
}

/// Ana's sale is routed to the pixel and TikTok once: its replay and a
/// move out and back queue nothing. Answers Ana's lead id.
async fn a_sale_is_routed_once_whatever_comes_again(h: &Harness) -> String {
    let (s, b) = record(h, "ana", "c1", json!({"contact": contact()})).await;
    assert_eq!(s, 201, "{b}");
    let lead = lead_id(&b);
    assert_eq!(b["queued"], json!([]), "sendLeadEvent is off: no Lead");
    assert!(b.get("routed").is_none());
    let sale = json!({"column": "agendado", "stage": "won", "revenueCents": 45990,
                      "contact": contact()});
    let (s, b) = move_to(h, "ana", "c2", sale.clone()).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["queued"], json!(["Schedule", "Purchase"]));
    assert_eq!(b["routed"], json!({"tiktok-br": ["Schedule", "Purchase"]}));
    // The same change again: seen, nothing queued.
    let (_, again) = move_to(h, "ana", "c2", sale).await;
    assert_eq!(
        (&again["duplicate"], &again["queued"], again.get("routed")),
        (&json!(true), &json!([]), None)
    );
    // Back and into the column again: each event went once already.
    move_to(
        h,
        "ana",
        "c3",
        json!({"column": "fechado", "contact": contact()}),
    )
    .await;
    let (_, b) = move_to(
        h,
        "ana",
        "c4",
        json!({"column": "agendado", "contact": contact()}),
    )
    .await;
    assert_eq!((&b["queued"], b.get("routed")), (&json!([]), None));
    lead
}

/// Each platform got the events with its own hashes of the phone: TikTok's
/// E.164 with +, Meta's digits without.
async fn each_platform_got_its_own_hashes(h: &Harness, lead: &str) {
    drain(h).await;
    let tiktok = h.platforms().accepted();
    let mut names: Vec<&str> = tiktok.iter().map(|a| a.event_name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["Purchase", "Schedule"]);
    let sale = tiktok
        .iter()
        .find(|a| a.event_id == event_id(lead, EventName::Purchase))
        .expect("the sale, under the lead's event id");
    assert_eq!(
        sale.event["user"]["phone"],
        json!(sha256_hex("+5511987654321")),
        "TikTok's E.164 with +"
    );
    assert_eq!(sale.event["properties"]["value"], json!(459.9));
    let meta = h.fake().accepted_events();
    assert_eq!(meta.len(), 2);
    assert!(
        meta.iter()
            .all(|e| e.user_data["ph"] == json!([sha256_hex("5511987654321")])),
        "Meta's digits without +"
    );
}

/// Listed under the lead, whatever their destination; removed with the
/// lead: every row, and the counters with them.
async fn listed_under_the_lead_and_removed_with_it(h: &Harness) {
    let listed = h
        .expect(200, "GET", "/v1/sites/loja-x/leads/ana/conversions", None)
        .await;
    let mut to: Vec<(String, String)> = listed["conversions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["destination"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    to.sort();
    assert_eq!(
        to,
        [
            ("meta", "sent"),
            ("meta", "sent"),
            ("tiktok-br", "sent"),
            ("tiktok-br", "sent")
        ]
        .map(|(d, s)| (d.to_owned(), s.to_owned()))
    );
    // Removed with the lead: every row, and the counters with them.
    h.expect(200, "DELETE", "/v1/sites/loja-x/leads/ana", None)
        .await;
    assert!(rows(h, "loja-x").await.is_empty());
    let st = h
        .expect(200, "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(
        st["sites"][0]["conversions"]["destinations"]["tiktok-br"],
        json!({"pending": 0, "sent": 0, "failed": 0})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_without_a_pixel_sends_its_leads_to_its_destinations() {
    let h = Harness::start().await;
    loja(&h).await;
    add_tiktok(&h, "tiktok-br", "C4LOJAX01", None).await;
    // No pixel: its `sendLeadEvent` is not there to say no, so a new lead
    // sends Lead. `meta`'s phone hash is Meta's rule, which TikTok's is
    // not: only the plain contact reaches TikTok.
    let (s, b) = record(
        &h,
        "bia",
        "c1",
        json!({"meta": meta_for("bia"), "contact": {"email": "bia@example.com"}}),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["queued"], json!([]));
    assert_eq!(b["routed"], json!({"tiktok-br": ["Lead"]}));
    // Only `meta`: nothing TikTok can match on, nothing queued there.
    let (_, b) = record(&h, "caio", "c2", json!({"meta": meta_for("caio")})).await;
    assert!(b.get("routed").is_none(), "{b}");
    drain(&h).await;
    let taken = h.platforms().accepted();
    assert_eq!(taken.len(), 1);
    assert_eq!(
        taken[0].event["user"],
        json!({"email": sha256_hex("bia@example.com")}),
        "no phone: Meta's hash is not TikTok's"
    );
    assert!(h.fake().accepted_events().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_contact_field_is_dropped_with_a_warning_naming_it() {
    let h = Harness::start().await;
    with_tiktok(&h).await;
    let (s, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "contact": {"email": "not-an-email", "phone": "(11) 98765-4321"}}),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["warnings"], json!(["contact.email: dropped: malformed"]));
    assert_eq!(b["routed"], json!({"tiktok-br": ["Schedule"]}));
    assert!(!b.to_string().contains("not-an-email"));
    let (s, b) = record(&h, "bad", "c2", json!({"contact": {"mail": "x@y.z"}})).await;
    assert_eq!(s, 400, "an unknown field is refused");
    assert!(
        b["error"]["message"].as_str().unwrap().contains("mail"),
        "{b}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_with_rows_for_twenty_destinations_is_written_and_removed_whole() {
    let h = Harness::start().await;
    loja(&h).await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pipeline",
        Some(json!({"columns": [{"key": "agendado", "name": "Agendado"}]})),
    )
    .await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/event-map",
        Some(json!({"columns": {"agendado": "Schedule"}})),
    )
    .await;
    // The most live destinations a site may have: every change's rows
    // still fit its one transaction.
    for i in 0..20 {
        add_tiktok(&h, &format!("tt-{i}"), &format!("C4LOJAX{i:02}"), None).await;
    }
    let (s, b) = record(
        &h,
        "ana",
        "c1",
        json!({"column": "agendado", "contact": contact()}),
    )
    .await;
    assert_eq!(s, 201, "{b}");
    let (s, b) = move_to(
        &h,
        "ana",
        "c2",
        json!({"stage": "won", "revenueCents": 100, "contact": contact()}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["routed"].as_object().unwrap().len(), 20);
    assert_eq!(
        rows(&h, "loja-x").await.len(),
        60,
        "Lead, Schedule, Purchase"
    );
    // Removed in more than one transaction (45 rows each), every row once.
    h.expect(200, "DELETE", "/v1/sites/loja-x/leads/ana", None)
        .await;
    assert!(rows(&h, "loja-x").await.is_empty());
    let st = h
        .expect(200, "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    let destinations = st["sites"][0]["conversions"]["destinations"]
        .as_object()
        .unwrap()
        .clone();
    assert!(
        destinations
            .values()
            .all(|d| d == &json!({"pending": 0, "sent": 0, "failed": 0})),
        "{destinations:?}"
    );
}
