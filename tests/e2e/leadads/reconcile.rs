//! The 15-minute reconciliation: a lead whose webhook never came arrives
//! all the same; a link's first reconciliation reads its backfill (and no
//! further); leads already kept are not read again; Meta's throttling
//! moves the Page's next turn back an hour and shows as its `lastError`.
use adtrail_domain::time::{DAY_MS, MINUTE_MS};
use adtrail_fake_meta::{Delivery, Throttle};
use adtrail_tests::*;
use serde_json::json;

use super::{LOJA_PAGE, submit_on_loja};

async fn submit(h: &Harness, delivery: Delivery) -> String {
    submit_on_loja(h, &[], delivery).await
}

async fn on_board(h: &Harness, id: &str) -> bool {
    h.store()
        .leads()
        .get_lead("loja-x", &format!("meta-lead:{id}"))
        .await
        .unwrap()
        .is_some()
}

/// The linked Page's forms, as the API shows them.
async fn forms(h: &Harness) -> serde_json::Value {
    h.expect(
        200,
        "GET",
        &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms"),
        None,
    )
    .await
}

/// Reads of one lead by the worker.
fn reads_of(h: &Harness, id: &str) -> usize {
    h.fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("/{id}")))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leads_whose_webhook_never_came_arrive_within_15_minutes() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    // Two leads before the link: one 3 days old, one 1 day old.
    let old = submit(&h, Delivery::Never).await;
    h.runner().advance(2 * DAY_MS).await.unwrap();
    let recent = submit(&h, Delivery::Never).await;
    h.runner().advance(DAY_MS).await.unwrap();
    // Meta throttles the forms' read at link: the link stands, and the
    // first reconciliation reads the forms itself.
    h.fake().tune(|k| {
        k.throttle = Some(Throttle {
            code: 80005,
            remaining: 1,
            regain_minutes: 0,
            only_path: Some("/leadgen_forms".into()),
        })
    });
    h.expect(
        201,
        "PUT",
        &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}"),
        Some(json!({"ownerKey": "agency", "backfillDays": 2})),
    )
    .await;
    let (s, b) = h
        .call(
            "PUT",
            &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}"),
            Some(json!({"ownerKey": "agency", "backfillDays": 91})),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
    // The first sweep reconciles at once: the backfill's two days.
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(
        (tick.sweep.pages_reconciled, tick.sweep.form_leads_requeued),
        (1, 1)
    );
    assert!(on_board(&h, &recent).await, "within the backfill");
    assert_eq!(
        forms(&h).await["forms"].as_array().unwrap().len(),
        1,
        "read by the sweep"
    );
    assert!(!on_board(&h, &old).await, "older than the backfill");

    // A lead whose webhook never comes, and one whose webhook comes.
    let lost = submit(&h, Delivery::Never).await;
    let announced = submit(&h, Delivery::Once).await;
    h.runner().drain().await.unwrap();
    assert!(!on_board(&h, &lost).await && on_board(&h, &announced).await);
    // Not its turn yet.
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(tick.sweep.pages_reconciled, 0);
    h.runner().advance(15 * MINUTE_MS).await.unwrap();
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(
        (tick.sweep.pages_reconciled, tick.sweep.form_leads_requeued),
        (1, 1)
    );
    assert!(on_board(&h, &lost).await, "the reconciliation brought it");
    assert_eq!(reads_of(&h, &announced), 1, "a kept lead is not read again");
    let shown = forms(&h).await;
    assert_eq!(shown["lastReconcileAt"], json!(h.now()));
    assert_eq!(shown["lastError"], json!(null));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_reconciliation_waits_an_hour_and_keeps_its_checkpoint() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    super::link_loja_page(&h).await;
    h.runner().tick().await.unwrap();
    // Meta throttles: the Page waits an hour (or what Meta says), and says so.
    h.fake().tune(|k| {
        k.throttle = Some(Throttle {
            code: 80005,
            remaining: 1,
            regain_minutes: 0,
            only_path: Some("/leads".into()),
        })
    });
    let late = submit(&h, Delivery::Never).await;
    h.runner().advance(15 * MINUTE_MS).await.unwrap();
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(tick.sweep.pages_reconciled, 1);
    assert!(!on_board(&h, &late).await);
    let shown = forms(&h).await;
    assert!(
        shown["lastError"]
            .as_str()
            .unwrap()
            .starts_with("RATE_LIMITED"),
        "{shown}"
    );
    h.runner().advance(30 * MINUTE_MS).await.unwrap();
    assert_eq!(
        h.runner().tick().await.unwrap().sweep.pages_reconciled,
        0,
        "an hour"
    );
    h.runner().advance(31 * MINUTE_MS).await.unwrap();
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(
        (tick.sweep.pages_reconciled, tick.sweep.form_leads_requeued),
        (1, 1)
    );
    assert!(
        on_board(&h, &late).await,
        "read from the checkpoint the throttle kept"
    );
}
