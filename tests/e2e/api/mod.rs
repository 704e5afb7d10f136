//! The API's contract for bad input, authentication, grants, ownership and
//! the reports: a clear 4xx naming the field, nothing written, and figures
//! that equal the stored rows. One module per part of the API.

use adtrail_tests::*;
use serde_json::{Value, json};

mod answer_size;
mod auth;
mod connections;
mod daily;
mod deadline;
mod destination_checks;
mod destinations;
mod erase;
mod leads_report;
mod links;
mod owners;
mod pixels;
mod sites;

pub(super) fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

pub(super) fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap_or("")
}

/// A lead at Loja X and its sale; answers what the sale queued.
pub(super) async fn sale(h: &Harness, key: &str) -> Value {
    h.expect(201, "POST",
            "/v1/sites/loja-x/leads",
            Some(json!({"leadKey": key, "changeId": format!("{key}-1"), "occurredAt": h.now(), "origin": "organic"}))).await;
    let (_, b) = h
        .call(
            "POST",
            &format!("/v1/sites/loja-x/leads/{key}/stage"),
            Some(json!({"changeId": format!("{key}-2"), "occurredAt": h.now(), "stage": "won", "revenueCents": 100, "meta": adtrail_tests::capi::meta_for(key)})),
        )
        .await;
    b["queued"].clone()
}
