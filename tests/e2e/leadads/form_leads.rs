//! A site's form leads: listed as kept (ids, decision, origin, return;
//! never an answer) for a host catching up, one read live with its
//! answers (host only, stored nowhere, never cached), and returned as a
//! bad lead once; the forms report counts them.
use adtrail_fake_meta::{Delivery, SAMPLE_FORMS};
use adtrail_tests::*;
use serde_json::json;

use super::{LOJA_PAGE, link_loja_page, submit_on_loja};

const EMAIL: &str = "ana.reservada@example.com";

async fn submit(h: &Harness, interesse: &str) -> String {
    let answers = [
        ("full_name", "Ana Reservada"),
        ("email", EMAIL),
        ("interesse", interesse),
    ];
    submit_on_loja(h, &answers, Delivery::Once).await
}

/// Loja X's Page linked and three form leads on it, a second apart.
async fn loja_with_three_leads() -> (Harness, Vec<String>) {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    link_loja_page(&h).await;
    let mut ids = vec![];
    for choice in ["comprar", "curioso", "orcamento"] {
        ids.push(submit(&h, choice).await);
        h.runner().advance(1_000).await.unwrap();
    }
    h.runner().drain().await.unwrap();

    (h, ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn form_leads_are_listed_and_one_read_live() {
    let (h, ids) = loja_with_three_leads().await;
    listed_oldest_first_a_page_at_a_time(&h, &ids).await;
    one_lead_read_live_by_the_host_only(&h, &ids).await;
}

/// Listed oldest first, a page at a time, within `since` and `after`;
/// a list carries no answer.
async fn listed_oldest_first_a_page_at_a_time(h: &Harness, ids: &[String]) {
    let page = h
        .expect(200, "GET", "/v1/sites/loja-x/form-leads?limit=2", None)
        .await;
    let listed: Vec<&str> = page["formLeads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["leadgenId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [ids[0].as_str(), ids[1].as_str()]);
    assert_eq!(
        page["formLeads"][0]["leadKey"],
        json!(format!("meta-lead:{}", ids[0]))
    );
    assert_eq!(page["formLeads"][0]["decision"]["kind"], json!("column"));
    let next = page["next"].as_str().unwrap().to_owned();
    let rest = h
        .expect(
            200,
            "GET",
            &format!(
                "/v1/sites/loja-x/form-leads?after={}",
                next.replace('#', "%23")
            ),
            None,
        )
        .await;
    assert_eq!(rest["formLeads"][0]["leadgenId"], json!(ids[2]));
    assert_eq!(rest["next"], json!(null));
    let none = h
        .expect(
            200,
            "GET",
            &format!("/v1/sites/loja-x/form-leads?since={}", h.now() + 1),
            None,
        )
        .await;
    assert_eq!(none["formLeads"], json!([]));
    let (s, _) = h
        .call("GET", "/v1/sites/loja-x/form-leads?after=x", None)
        .await;
    assert_eq!(s, 400);
    let both = h
        .expect(
            200,
            "GET",
            &format!(
                "/v1/sites/loja-x/form-leads?since={}&after=0000000000000%230",
                h.now() + 1
            ),
            None,
        )
        .await;
    assert_eq!(both["formLeads"], json!([]), "both bounds hold");
    assert!(
        !page.to_string().contains(EMAIL),
        "a list carries no answer"
    );
}

/// One lead, its answers read live from Meta; never cached; a dashboard,
/// even granted the site, never reads answers.
async fn one_lead_read_live_by_the_host_only(h: &Harness, ids: &[String]) {
    let path = format!("/v1/sites/loja-x/form-leads/{}", ids[0]);
    let resp = h
        .http
        .get(format!("{}{path}", h.app.api_url))
        .bearer_auth(h.app.host_token())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let lead: serde_json::Value = resp.json().await.unwrap();
    let email = lead["answers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["questionKey"] == "email")
        .unwrap();
    assert_eq!(email["values"], json!([EMAIL]));
    assert_eq!(email["label"], json!("E-mail"));
    // A dashboard, even granted the site, never reads answers.
    let reader = h
        .app
        .local
        .keys
        .sign(json!({"sub": "r", "scope": "adtrail:read", "sites": ["loja-x"]}));
    assert_eq!(h.call_as(Some(&reader), "GET", &path, None).await.0, 403);
    let (s, _) = h.call("GET", "/v1/sites/loja-x/form-leads/123", None).await;
    assert_eq!(s, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_lead_is_returned_once_and_the_forms_report_counts_it() {
    let (h, ids) = loja_with_three_leads().await;
    let path = format!("/v1/sites/loja-x/form-leads/{}", ids[0]);
    // Returned once, with its reason; a second return changes nothing.
    let ret = format!("{path}/return");
    let (s, b) = h
        .call("POST", &ret, Some(json!({"reason": "not a lead!"})))
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
    let first = h
        .expect(200, "POST", &ret, Some(json!({"reason": "spam"})))
        .await;
    assert_eq!(
        first["formLead"]["returned"],
        json!({"at": h.now(), "reason": "spam"})
    );
    let again = h
        .expect(200, "POST", &ret, Some(json!({"reason": "other"})))
        .await;
    assert_eq!(again["duplicate"], json!(true));
    assert_eq!(again["formLead"]["returned"]["reason"], json!("spam"));
    // The forms report: the form's leads, the board's sale, the return.
    let key = format!("meta-lead:{}", ids[0]);
    h.expect(
        200,
        "POST",
        &format!("/v1/sites/loja-x/leads/{key}/stage"),
        Some(json!({"changeId": "sold", "occurredAt": h.now(), "stage": "won", "revenueCents": 45_990})),
    )
    .await;
    let day = h.now() - h.now().rem_euclid(86_400_000);
    let report = h
        .expect(
            200,
            "GET",
            &format!("/v1/reports/forms?siteIds=loja-x&from={day}&to={day}"),
            None,
        )
        .await;
    let figures = json!([{"siteId": "loja-x", "pageId": LOJA_PAGE, "formId": SAMPLE_FORMS[0].0,
        "name": SAMPLE_FORMS[0].2, "leads": 3, "entry": 3, "columns": [], "discarded": [],
        "qualified": 1, "won": 1, "revenueCents": 45_990, "returned": 1}]);
    assert_eq!(report["forms"], figures);
    assert_eq!(report["formsTruncated"], false);
    counted_once_from_counters_over_a_year(&h, &ids, day, &figures).await;
    let table = h.table_text().await;
    assert!(!table.contains(EMAIL) && !table.contains("Ana Reservada"));
}

/// The report reads counters, not the records (kept 90 days): a lead
/// delivered again counts once, a year's range is taken, and with every
/// record gone (as DynamoDB's TTL takes them) the figures stay.
async fn counted_once_from_counters_over_a_year(
    h: &Harness,
    ids: &[String],
    day: i64,
    figures: &serde_json::Value,
) {
    let again = adtrail_store::queue::LeadgenMessage {
        page_id: LOJA_PAGE.into(),
        leadgen_id: ids[1].clone(),
        form_id: None,
        ad_id: None,
        adgroup_id: None,
        created_time: None,
        via: "webhook".into(),
    };
    h.store().queues().enqueue_leadgen(&[again]).await.unwrap();
    h.runner().drain().await.unwrap();
    let year = format!(
        "/v1/reports/forms?siteIds=loja-x&from={}&to={day}",
        day - 365 * 86_400_000
    );
    assert_eq!(h.expect(200, "GET", &year, None).await["forms"], *figures);
    let records = format!("formleads#loja-x#{}", SAMPLE_FORMS[0].0);
    let items = h
        .store()
        .ddb
        .query()
        .table_name(&h.store().names.table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(records.clone()),
        )
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(items.len(), 3, "the three records");
    for item in items {
        h.store()
            .ddb
            .delete_item()
            .table_name(&h.store().names.table)
            .set_key(Some(
                item.into_iter()
                    .filter(|(k, _)| k == "pk" || k == "sk")
                    .collect(),
            ))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(h.expect(200, "GET", &year, None).await["forms"], *figures);
    let (s, e) = h
        .call(
            "GET",
            &format!(
                "/v1/reports/forms?siteIds=loja-x&from={}&to={day}",
                day - 366 * 86_400_000
            ),
            None,
        )
        .await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT"))
    );
}
