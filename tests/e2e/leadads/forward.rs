//! The forward door: a control plane hands one form lead to the stack with
//! a token made for that lead alone, which opens nothing else; no other
//! token opens the door.
use adtrail_domain::time::{Clock, SystemClock};
use adtrail_fake_meta::{Delivery, Submission};
use adtrail_tests::*;

use super::{LOJA_PAGE, link_loja_page};
use serde_json::{Value, json};

/// A forwarding token for `page` and `lead`, living `life` seconds (the
/// authorizer checks `exp` on the wall clock).
fn forward_token(h: &Harness, page: &str, lead: &str, life: i64) -> String {
    let now = SystemClock.now_ms() / 1_000;
    h.app.local.keys.sign(json!({
        "sub": "control-plane:meta-webhook", "purpose": "meta_leadgen",
        "page_id": page, "leadgen_id": lead, "iat": now, "exp": now + life,
    }))
}

async fn forward(h: &Harness, token: &str, page: &str, lead: &str) -> (u16, Value) {
    h.call_as(
        Some(token),
        "POST",
        "/v1/meta/leadgen",
        Some(json!({"pageId": page, "leadgenId": lead}).to_string()),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_lead_takes_the_webhooks_path_with_its_own_token_only() {
    let started = Harness::start().await;
    let h = &started;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    // A lead Meta announced to the control plane, not to the stack.
    let lead = h
        .fake()
        .submit_lead(Submission {
            page_id: LOJA_PAGE.into(),
            form_id: adtrail_fake_meta::SAMPLE_FORMS[0].0.into(),
            ad_id: None,
            answers: Default::default(),
            delivery: Delivery::Never,
        })
        .await
        .unwrap();
    let id = lead.leadgen_id.as_str();
    let token = forward_token(h, LOJA_PAGE, id, 120);
    // The Page feeds no site yet: not taken, said so.
    assert_eq!(
        forward(h, &token, LOJA_PAGE, id).await,
        (200, json!({"accepted": false, "reason": "PAGE_NOT_LINKED"}))
    );
    link_loja_page(h).await;
    the_token_names_its_page_and_lead(h, &token, id).await;
    only_a_short_forwarding_token_opens_the_door(h, &token, id).await;
    taken_once_however_often_forwarded(h, &token, id).await;
}

/// The token's lead, and no other; ids are digits; the body is two ids,
/// at most 4 KiB.
async fn the_token_names_its_page_and_lead(h: &Harness, token: &str, id: &str) {
    let (s, b) = forward(h, token, LOJA_PAGE, "900000000000999").await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (401, Some("UNAUTHENTICATED"))
    );
    let (s, b) = forward(h, token, "9", id).await;
    assert_eq!(s, 401, "{b}");
    // Ids are digits; the body is two ids.
    let (s, b) = forward(h, token, "12a", id).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
    assert!(
        b["error"]["message"].as_str().unwrap().contains("pageId"),
        "{b}"
    );
    let (s, _) = h
        .call_as(
            Some(token),
            "POST",
            "/v1/meta/leadgen",
            Some(format!(
                r#"{{"pageId":"{LOJA_PAGE}","leadgenId":"{id}","pad":"{}"}}"#,
                "x".repeat(5_000)
            )),
        )
        .await;
    assert_eq!(s, 400, "past 4 KiB");
}

/// A token living past ten minutes, or the host's token, is refused; the
/// forwarding token opens no other route; nothing refused was taken.
async fn only_a_short_forwarding_token_opens_the_door(h: &Harness, token: &str, id: &str) {
    let long = forward_token(h, LOJA_PAGE, id, 601);
    assert_eq!(forward(h, &long, LOJA_PAGE, id).await.0, 401);
    let host = h.app.host_token();
    assert_eq!(forward(h, &host, LOJA_PAGE, id).await.0, 403);
    // The forwarding token opens no other route.
    let (s, _) = h
        .call_as(Some(token), "GET", "/v1/meta/status?siteIds=loja-x", None)
        .await;
    assert_eq!(s, 403);
    assert!(
        h.store()
            .leads()
            .get_lead("loja-x", &format!("meta-lead:{id}"))
            .await
            .unwrap()
            .is_none(),
        "nothing refused was taken"
    );
}

/// Taken: the worker records it as a webhook's lead, once however often
/// it is forwarded.
async fn taken_once_however_often_forwarded(h: &Harness, token: &str, id: &str) {
    assert_eq!(
        forward(h, token, LOJA_PAGE, id).await,
        (202, json!({"accepted": true}))
    );
    assert_eq!(forward(h, token, LOJA_PAGE, id).await.0, 202);
    let report = h.runner().drain().await.unwrap();
    assert_eq!((report.delivered, report.failed), (2, 0));
    let recorded = h
        .store()
        .leads()
        .get_lead("loja-x", &format!("meta-lead:{id}"))
        .await
        .unwrap()
        .expect("the forwarded lead is on the board");
    assert_eq!(recorded.origin, "lead_form_organic");
}
