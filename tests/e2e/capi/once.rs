//! Each event once per lead: a replayed change, a change seen before and
//! a failed event reopened, with their answers.

use adtrail_domain::time::MINUTE_MS;
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

use super::drain;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn once_per_lead_per_event_and_idempotent_changes() {
    let started = Harness::start().await;
    let h = &started;
    loja_with_pixel(h).await;
    each_event_once_whatever_the_lead_does(h).await;
    the_event_map_counts_distinct_leads(h).await;
    the_board_and_the_map_change_together(h).await;
}

/// A change replayed, out of a column and back, a move older than the
/// last, a second sale: each event goes once.
async fn each_event_once_whatever_the_lead_does(h: &Harness) {
    let (_, b) = record(
        h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!(["Schedule"]));
    // The same change again: nothing.
    let (s, b) = record(
        h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(
        (s, b["duplicate"].clone(), b["queued"].clone()),
        (200, json!(true), json!([])),
        "{b}"
    );
    h.runner().advance(MINUTE_MS).await.unwrap();
    // Out and back into the column: not queued again.
    move_to(
        h,
        "ana",
        "c2",
        json!({"column": "fechado", "meta": meta_for("ana")}),
    )
    .await;
    h.runner().advance(MINUTE_MS).await.unwrap();
    let (_, b) = move_to(
        h,
        "ana",
        "c3",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]), "{b}");
    // A move older than the last changes nothing.
    let old = h.now() - 30 * MINUTE_MS;
    let (_, b) = move_to(
        h,
        "ana",
        "c4",
        json!({"column": "qualificado", "occurredAt": old, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(
        (b["changed"].clone(), b["column"].clone()),
        (json!(false), json!("agendado")),
        "{b}"
    );
    // A second sale of the same lead: one Purchase.
    move_to(
        h,
        "ana",
        "c5",
        json!({"stage": "won", "revenueCents": 1_000, "meta": meta_for("ana")}),
    )
    .await;
    let (_, b) = move_to(
        h,
        "ana",
        "c6",
        json!({"stage": "won", "revenueCents": 2_000, "meta": meta_for("ana")}),
    )
    .await;
    assert_eq!(b["queued"], json!([]));
    drain(h).await;
    let names: Vec<String> = h
        .fake()
        .accepted_events()
        .iter()
        .map(|e| e.event_name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// The event map counts distinct leads that entered a column in 30 days.
async fn the_event_map_counts_distinct_leads(h: &Harness) {
    record(h, "bia", "c7", json!({"column": "agendado"})).await;
    let (s, map) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/event-map?now={}", h.now()),
            None,
        )
        .await;
    assert_eq!(s, 200, "{map}");
    let agendado = map["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "agendado")
        .unwrap();
    assert_eq!(
        agendado["monthCount"], 2,
        "ana came back but counts once: {map}"
    );
    assert_eq!(agendado["event"], "Schedule");
    assert_eq!(agendado["color"], "#f97316");
    assert_eq!(map["pixelEnabled"], true);
    let (_, map) = h.call("GET", "/v1/sites/loja-x/event-map", None).await;
    assert!(
        map["columns"][0]["monthCount"].is_null(),
        "null without now"
    );
}

/// A column that is gone leaves the map, one that stays keeps its event;
/// a map naming an undeclared column, or a board past 40 columns, is
/// refused.
async fn the_board_and_the_map_change_together(h: &Harness) {
    let (s, _) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pipeline",
            Some(json!({"columns": [{"key": "agendado", "name": "Agendado!"}]})),
        )
        .await;
    assert_eq!(s, 200);
    let (_, map) = h.call("GET", "/v1/sites/loja-x/event-map", None).await;
    assert_eq!(
        map["columns"],
        json!([{"key": "agendado", "name": "Agendado!", "group": null, "color": null, "event": "Schedule", "monthCount": null}])
    );
    let (s, e) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/event-map",
            Some(json!({"columns": {"qualificado": "Lead"}})),
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].clone()),
        (400, json!("INVALID_ARGUMENT")),
        "{e}"
    );
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("columns.qualificado")
    );
    let many: Vec<Value> = (0..41)
        .map(|i| json!({"key": format!("c{i}"), "name": "x"}))
        .collect();
    let (s, e) = h
        .call(
            "PUT",
            "/v1/sites/loja-x/pipeline",
            Some(json!({"columns": many})),
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].clone()),
        (409, json!("LIMIT_EXCEEDED"))
    );
}
