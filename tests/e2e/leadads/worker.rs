//! A form lead from Meta's form to the host's board: the fake submits it
//! and delivers Meta's signed webhook (twice, late, or to a Page no site
//! links), the leadgen worker reads it with the Page's token (never its
//! answers), records it once per `leadgen_id`, and tells the bus; a Page
//! token Meta refuses keeps the lead on the queue until it works again, and
//! a read Meta throttles waits as long as Meta says (an hour at least).
use adtrail_domain::leads::Lead;
use adtrail_domain::time::MINUTE_MS;
use adtrail_fake_meta::{Delivery, Submission, Submitted, page_token, sample_accounts};
use adtrail_tests::*;

use super::{LOJA_PAGE, link_loja_page};
use serde_json::json;

const LOJA_FORM: &str = "700800900100";

/// Loja X linked to its Page, the bus tapped.
async fn linked() -> (Harness, adtrail_tests::bus::BusTap) {
    let h = Harness::start().await;
    let tap = h.tap_bus().await;
    h.put_site("loja-x", "BRL").await;
    h.put_site("pet-mania", "USD").await;
    h.connect(TOKEN).await;
    link_loja_page(&h).await;
    (h, tap)
}

/// The lead a form lead recorded on `site`, if any.
async fn form_lead(h: &Harness, site: &str, leadgen_id: &str) -> Option<Lead> {
    h.store()
        .leads()
        .get_lead(site, &format!("meta-lead:{leadgen_id}"))
        .await
        .unwrap()
}

/// Submits a lead on Loja X's form, delivered as asked.
async fn submit(h: &Harness, ad: Option<&str>, delivery: Delivery) -> Submitted {
    h.fake()
        .submit_lead(submission(ad, delivery))
        .await
        .unwrap()
}

/// Runs the queues until idle: the messages delivered and failed.
async fn drained(h: &Harness) -> (usize, usize) {
    let report = h.runner().drain().await.unwrap();
    (report.delivered, report.failed)
}

fn submission(ad: Option<&str>, delivery: Delivery) -> Submission {
    Submission {
        page_id: LOJA_PAGE.into(),
        form_id: LOJA_FORM.into(),
        ad_id: ad.map(str::to_owned),
        answers: [
            ("full_name".to_owned(), vec!["Maria Sigilosa".to_owned()]),
            (
                "email".to_owned(),
                vec!["maria.sigilosa@example.com".to_owned()],
            ),
        ]
        .into(),
        delivery,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_lead_reaches_the_board_once_and_the_bus_without_its_answers() {
    let (h, tap) = linked().await;
    let ad = sample_accounts()[0].ads[0].clone();
    let paid = submit(&h, Some(&ad.id), Delivery::Twice).await;
    assert_eq!(paid.delivered, 2, "the stack took both deliveries");
    let organic = submit(&h, None, Delivery::Once).await;
    assert_eq!(drained(&h).await, (3, 0), "delivered, failed");

    let lead = form_lead(&h, "loja-x", &paid.leadgen_id)
        .await
        .expect("the paid lead is on the board");
    assert_eq!(
        (lead.origin.as_str(), lead.ad_id.as_deref()),
        ("lead_form", Some(ad.id.as_str()))
    );
    assert_eq!(lead.created_at, T0 - T0 % 1_000, "Meta's created_time");
    let organic_lead = form_lead(&h, "loja-x", &organic.leadgen_id)
        .await
        .expect("the organic lead too");
    assert_eq!(
        (organic_lead.origin.as_str(), organic_lead.ad_id),
        ("lead_form_organic", None)
    );

    // One event per lead, although the paid one came twice.
    let events = tap.take(&h).await;
    let arrived: Vec<_> = events
        .iter()
        .filter(|e| e.detail_type == "FormLeadArrived")
        .collect();
    assert_eq!(arrived.len(), 2, "{events:?}");
    let first = arrived
        .iter()
        .find(|e| e.detail["leadgenId"] == json!(paid.leadgen_id))
        .expect("the paid lead's event");
    assert_eq!(first.detail["siteId"], json!("loja-x"));
    assert_eq!(first.detail["pageId"], json!(LOJA_PAGE));
    assert_eq!(first.detail["formId"], json!(LOJA_FORM));
    assert_eq!(first.detail["leadId"], json!(lead.lead_id));
    assert_eq!(
        first.detail["decision"],
        json!({"kind": "column", "column": null, "rule": null}),
        "no rules yet: the board's default"
    );
    assert_eq!(first.detail["origin"]["kind"], json!("lead_form"));
    assert_eq!(first.detail["origin"]["adName"], json!(ad.name));
    assert_eq!(first.detail["origin"]["campaignId"], json!(ad.campaign_id));
    for e in &events {
        assert!(
            !e.raw.contains("Sigilosa") && !e.raw.contains("sigilosa@"),
            "no answer on the bus: {}",
            e.raw
        );
    }
    // Read with the Page's own token; its answers kept nowhere.
    let reads: Vec<_> = h
        .fake()
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with(&format!("/{}", paid.leadgen_id)))
        .collect();
    assert!(!reads.is_empty());
    for r in reads {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {}", page_token(LOJA_PAGE)).as_str())
        );
    }
    let table = h.table_text().await;
    assert!(!table.contains("Sigilosa") && !table.contains("sigilosa@"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_unlinked_and_refused_deliveries() {
    let (h, tap) = linked().await;
    // Pet Mania's Page feeds no site: its lead is dropped, not kept.
    let stray = h
        .fake()
        .submit_lead(Submission {
            page_id: "900800700".into(),
            form_id: "700800900200".into(),
            ..submission(None, Delivery::Once)
        })
        .await
        .unwrap();
    assert_eq!(stray.delivered, 1, "Meta gets its 200 all the same");
    // A lead whose webhook comes an hour late keeps Meta's time.
    let late = submit(&h, None, Delivery::Late).await;
    assert_eq!(drained(&h).await, (1, 0), "delivered, failed");
    h.runner().advance(60 * MINUTE_MS).await.unwrap();
    assert_eq!(h.fake().deliver_late().await, 1);
    h.runner().drain().await.unwrap();
    let lead = form_lead(&h, "loja-x", &late.leadgen_id)
        .await
        .expect("the late lead");
    assert_eq!(lead.created_at, T0 - T0 % 1_000, "when it was submitted");

    // Meta refuses the Page's token: the lead stays on the queue, and
    // arrives once the token works again.
    h.fake().kill_token(&page_token(LOJA_PAGE));
    let refused = submit(&h, None, Delivery::Once).await;
    assert_eq!(drained(&h).await, (0, 1), "delivered, failed");
    assert!(form_lead(&h, "loja-x", &refused.leadgen_id).await.is_none());
    h.fake().revive_token(&page_token(LOJA_PAGE));
    h.runner().advance(6 * MINUTE_MS + 1).await.unwrap();
    assert_eq!(drained(&h).await, (1, 0), "delivered, failed");
    assert!(form_lead(&h, "loja-x", &refused.leadgen_id).await.is_some());

    let arrived: Vec<String> = tap
        .take(&h)
        .await
        .into_iter()
        .filter(|e| e.detail_type == "FormLeadArrived")
        .map(|e| e.detail["leadgenId"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(arrived, [late.leadgen_id, refused.leadgen_id]);
    assert!(
        form_lead(&h, "pet-mania", &stray.leadgen_id)
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_leads_later_events_go_to_meta_as_conversion_leads() {
    let h = Harness::start().await;
    adtrail_tests::capi::loja_with_pixel(&h).await;
    link_loja_page(&h).await;
    let lead = submit(&h, None, Delivery::Once).await;
    h.runner().drain().await.unwrap();
    assert!(
        h.fake().accepted_events().is_empty(),
        "no Lead: Meta made the lead itself"
    );
    // The host qualifies and sells, with no contact data at all.
    let key = format!("meta-lead:{}", lead.leadgen_id);
    let (s, b) = adtrail_tests::capi::move_to(
        &h,
        &key,
        "q1",
        json!({"column": "qualificado", "stage": "won", "revenueCents": 45_990}),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["queued"], json!(["QualifiedLead", "Purchase"]), "{b}");
    assert_eq!(b["channel"], json!("form"), "a Lead Ads lead: {b}");
    h.runner().drain().await.unwrap();
    let sent = h.fake().accepted_events();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for e in &sent {
        assert_eq!(e.action_source, "system_generated");
        assert_eq!(
            e.user_data["lead_id"],
            json!(lead.leadgen_id.parse::<u64>().unwrap()),
            "matched on the lead id, unhashed"
        );
        let custom = e.custom_data.as_ref().unwrap();
        assert_eq!(custom["event_source"], json!("crm"));
        assert_eq!(custom["lead_event_source"], json!("adtrail"));
    }
    let purchase = sent.iter().find(|e| e.event_name == "Purchase").unwrap();
    assert_eq!(
        purchase.custom_data.as_ref().unwrap()["value"],
        json!(459.9)
    );
    // The same move again sends nothing twice.
    let (_, again) = adtrail_tests::capi::move_to(
        &h,
        &key,
        "q1",
        json!({"column": "qualificado", "stage": "won", "revenueCents": 45_990}),
    )
    .await;
    assert_eq!(again["duplicate"], json!(true));
    h.runner().drain().await.unwrap();
    assert_eq!(h.fake().accepted_events().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_delivery_of_many_leads_over_two_pages_and_its_retry() {
    let (h, tap) = linked().await;
    let mut changes = vec![];
    let mut loja = vec![];
    for i in 0..32 {
        let (page, form) = if i % 16 == 15 {
            ("900800700", adtrail_fake_meta::SAMPLE_FORMS[1].0)
        } else {
            (LOJA_PAGE, adtrail_fake_meta::SAMPLE_FORMS[0].0)
        };
        let id = h
            .fake()
            .submit_lead(Submission {
                page_id: page.into(),
                form_id: form.into(),
                ..submission(None, Delivery::Never)
            })
            .await
            .unwrap()
            .leadgen_id;
        if page == LOJA_PAGE {
            loja.push(id.clone());
        }
        changes.push((
            page,
            json!({"field": "leadgen", "value": {"leadgen_id": id,
            "page_id": page, "form_id": form, "created_time": h.now() / 1_000}}),
        ));
    }
    let entry = |page: &str| {
        let list: Vec<_> = changes
            .iter()
            .filter(|(p, _)| *p == page)
            .map(|(_, c)| c.clone())
            .collect();
        json!({"id": page, "time": h.now() / 1_000, "changes": list})
    };
    let body = json!({"object": "page", "entry": [entry(LOJA_PAGE), entry("900800700")]})
        .to_string()
        .into_bytes();
    let signature = adtrail_fake_meta::signature(&body);
    let headers = [
        ("content-type", "application/json"),
        ("x-hub-signature-256", signature.as_str()),
    ];
    let (s, _, answer) = h
        .call_raw("POST", "/v1/webhooks/meta", &headers, body.clone())
        .await;
    assert_eq!((s, answer.as_str()), (200, r#"{"received":32}"#));
    let report = h.runner().drain().await.unwrap();
    assert_eq!((report.delivered, report.failed), (32, 0));
    assert!(report.batches >= 4, "batches of at most 10: {report:?}");
    for id in &loja {
        assert!(form_lead(&h, "loja-x", id).await.is_some());
    }
    let arrived = |events: Vec<adtrail_tests::bus::TappedEvent>| {
        events
            .iter()
            .filter(|e| e.detail_type == "FormLeadArrived")
            .count()
    };
    assert_eq!(arrived(tap.take(&h).await), 30, "Pet Mania's two dropped");
    // Meta delivers it all again: nothing is read from Meta or announced.
    let reads = h.fake().requests().len();
    h.call_raw("POST", "/v1/webhooks/meta", &headers, body)
        .await;
    let report = h.runner().drain().await.unwrap();
    assert_eq!((report.delivered, report.failed), (32, 0));
    assert_eq!(
        h.fake().requests().len(),
        reads,
        "known leads are not read again"
    );
    assert_eq!(arrived(tap.take(&h).await), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_the_stack_has_not_read_is_read_at_its_first_lead() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    // Meta throttles the forms' read at link: no form is kept.
    h.fake().tune(|k| {
        k.throttle = Some(adtrail_fake_meta::Throttle {
            code: 80005,
            remaining: 1,
            regain_minutes: 0,
            only_path: Some("/leadgen_forms".into()),
        })
    });
    link_loja_page(&h).await;
    let lead = submit(&h, None, Delivery::Once).await;
    assert_eq!(drained(&h).await, (1, 0), "delivered, failed");
    assert!(form_lead(&h, "loja-x", &lead.leadgen_id).await.is_some());
    let forms = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms"),
            None,
        )
        .await;
    assert_eq!(
        forms["forms"].as_array().unwrap().len(),
        1,
        "read by the worker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_read_meta_throttles_waits_as_long_as_meta_says() {
    use adtrail_fake_meta::{Knobs, Throttle};
    let (h, _tap) = linked().await;
    // Meta's lead-retrieval limit (80005), regained in 90 minutes.
    h.fake().set_knobs(Knobs {
        throttle: Some(Throttle {
            code: 80_005,
            remaining: 1,
            regain_minutes: 90,
            only_path: None,
        }),
        ..Knobs::default()
    });
    let lead = submit(&h, None, Delivery::Once).await;
    assert_eq!(drained(&h).await, (0, 1), "delivered, failed");
    // Past the queue's own 6 minutes, and past the hour: still held.
    h.runner().advance(61 * MINUTE_MS).await.unwrap();
    assert_eq!(drained(&h).await, (0, 0), "held back, not tried again");
    assert!(form_lead(&h, "loja-x", &lead.leadgen_id).await.is_none());
    // Once Meta's 90 minutes have passed, it goes.
    h.runner().advance(30 * MINUTE_MS).await.unwrap();
    assert_eq!(drained(&h).await, (1, 0), "delivered, failed");
    assert!(form_lead(&h, "loja-x", &lead.leadgen_id).await.is_some());
}
