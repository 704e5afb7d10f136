//! Helpers for the Conversions API tests: Loja X with its pixel and
//! board, recording and moving its leads, reading its conversion rows.

use super::*;
use adtrail_domain::contact::sha256_hex;

/// `meta` for a contact: the phone as Meta normalises it, and the
/// host's contact id.
pub fn meta_for(contact: &str) -> Value {
    json!({
        "ph": [sha256_hex(&format!("55119{contact:0>8}"))],
        "externalId": sha256_hex(contact),
    })
}

/// Posts `events` to Loja X, expecting `202`; answers the API's answer.
pub async fn post_events(h: &Harness, events: Vec<Value>) -> Value {
    h.expect(
        202,
        "POST",
        "/v1/sites/loja-x/events",
        Some(json!({"events": events})),
    )
    .await
}

/// The ids of the events Meta accepted, sorted (a repeat stays).
pub fn meta_ids(h: &Harness) -> Vec<String> {
    let mut ids: Vec<String> = h
        .fake()
        .accepted_events()
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    ids.sort();
    ids
}

/// Loja X's pending and sent counters.
pub async fn pending_sent(h: &Harness) -> (i64, i64) {
    let c = h
        .store()
        .conversions()
        .conversion_counts("loja-x", None)
        .await
        .unwrap();
    (c.pending, c.sent)
}

/// Loja X (BRL, Brazil), nothing else.
pub async fn loja(h: &Harness) {
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x",
        Some(json!({"name": "Loja X", "currency": "BRL", "country": "BR"})),
    )
    .await;
}

/// Loja X (BRL, Brazil) with the agency's pixel, a board of four
/// columns and a map: `agendado` → Schedule, `qualificado` →
/// QualifiedLead.
pub async fn loja_with_pixel(h: &Harness) {
    loja(h).await;
    h.connect(TOKEN).await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pixel",
        Some(json!({"pixelId": adtrail_fake_meta::LOJA_PIXEL.0, "ownerKey": "agency"})),
    )
    .await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-x/pipeline",
        Some(json!({"columns": [
            {"key": "novo", "name": "Novo lead", "group": "Prospecção"},
            {"key": "qualificado", "name": "Qualificado"},
            {"key": "agendado", "name": "Agendado", "group": "Hora do Show", "color": "#f97316"},
            {"key": "fechado", "name": "Fechado"},
        ]})),
    )
    .await;
    h.expect(200, "PUT",
            "/v1/sites/loja-x/event-map",
            Some(json!({"columns": {"agendado": "Schedule", "qualificado": "QualifiedLead", "novo": null}, "sendLeadEvent": false}))).await;
}

/// Records a lead at Loja X; answers the body.
pub async fn record(h: &Harness, key: &str, change: &str, extra: Value) -> (u16, Value) {
    let mut body = json!({"leadKey": key, "changeId": change, "occurredAt": h.now(), "origin": "ctwa_ad", "adId": "120000000000000001", "label": format!("Cliente {key}")});
    if let (Some(b), Value::Object(more)) = (body.as_object_mut(), extra) {
        b.extend(more);
    }
    h.call("POST", "/v1/sites/loja-x/leads", Some(body)).await
}

/// Ana, a new lead at Loja X straight into `agendado` (change `c1`): one
/// `Schedule` for the pixel.
pub async fn schedule_ana(h: &Harness) -> (u16, Value) {
    record(
        h,
        "ana",
        "c1",
        json!({"column": "agendado", "meta": meta_for("ana")}),
    )
    .await
}

/// Moves a lead at Loja X; answers the body.
pub async fn move_to(h: &Harness, key: &str, change: &str, extra: Value) -> (u16, Value) {
    let mut body = json!({"changeId": change, "occurredAt": h.now()});
    if let (Some(b), Value::Object(more)) = (body.as_object_mut(), extra) {
        b.extend(more);
    }
    h.call(
        "POST",
        &format!("/v1/sites/loja-x/leads/{key}/stage"),
        Some(body),
    )
    .await
}

/// Every conversion row of a site, newest first.
pub async fn rows(h: &Harness, site: &str) -> Vec<adtrail_domain::capi::Conversion> {
    let mut all = vec![];
    let mut before: Option<(i64, String)> = None;
    loop {
        let page = h
            .store()
            .conversions()
            .list_conversions(
                site,
                100,
                before.as_ref().map(|(t, e)| (*t, Some(e.as_str()))),
            )
            .await
            .expect("rows");
        let n = page.len();
        before = page.last().map(|c| {
            let (at, id) = adtrail_domain::capi::parse_conversion_ref(&c.sk).expect("a reference");
            (at, id.to_owned())
        });
        all.extend(page);
        if n < 100 {
            return all;
        }
    }
}

/// A storefront's purchase at `now`: website, value, order, and a plain
/// contact with Meta's and TikTok's click ids.
pub fn purchase(id: &str, now: i64) -> Value {
    json!({
        "eventId": id, "event": "purchase", "occurredAt": now,
        "actionSource": "website", "eventSourceUrl": "https://loja-x.example/checkout",
        "valueCents": 45990, "currency": "BRL", "orderId": format!("order-{id}"),
        "contact": {"email": " Ana.Silva@Example.com ", "phone": "(11) 98765-4321",
                    "firstName": "Ana", "externalId": "Client-7",
                    "ip": "203.0.113.9", "userAgent": "Mozilla/5.0",
                    "fbc": "fb.1.1554763741205.AbCdEf", "ttclid": "E.C.P.tiktok-click"}
    })
}

/// Every message on the send queue lost (a crash between the write and
/// the queue, or a sender that took them and died).
pub async fn lose_queued_sends(h: &Harness) {
    let url = h.store().names.send_queue_url.clone();
    h.store()
        .sqs
        .purge_queue()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
}

/// `sk` of loja-x claimed now by a sender that dies and never ends it.
pub async fn claim_as_dead_sender(h: &Harness, sk: &str) {
    let claims = h
        .store()
        .conversions()
        .claim_sends(
            &[("loja-x".into(), sk.to_owned())],
            "dead-sender",
            adtrail_domain::capi::SEND_LEASE_MS,
            h.now(),
        )
        .await
        .unwrap();
    assert!(matches!(
        claims[0],
        adtrail_store::sending::Claim::Claimed(_)
    ));
}
