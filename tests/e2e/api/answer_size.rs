//! Answers against Lambda's 6 MB. The local API fails an answer whose
//! document passes Lambda's limit as the cloud does (API Gateway's `500`),
//! measured as Lambda measures it: the body a JSON string in the runtime's
//! response, each quote escaped once more. The largest answers adtrail
//! gives are cut to fit and say so: a leads report over thousands of ad
//! sets each in a campaign of its own, every name 400 quotes long (Meta
//! allows them, adtrail keeps 400 characters), and a Page of hundreds of
//! large forms.

use adtrail_domain::catalog::CatalogEntry;
use adtrail_store::attr::{n, s};
use adtrail_store::keys::{rollup_pk, rollup_sk};
use adtrail_store::lease::LeaseCondition;
use adtrail_tests::*;
use futures::{StreamExt, TryStreamExt};

const DAY_MS: i64 = 86_400_000;
/// Ads, each in an ad set and a campaign of its own: their groups alone
/// come to about 11 MB in Lambda's document.
const ADS: usize = 3_000;

/// The size of the document Lambda would be posted for `answer`, as the
/// local API measures it; fails the test past Lambda's limit.
fn fitting_document(answer: &serde_json::Value) -> usize {
    let response = lambda_http::Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(lambda_http::Body::Text(answer.to_string()))
        .expect("a response");
    let document = adtrail_local::http::response_document_len(&response);
    assert!(
        document < adtrail_local::http::LAMBDA_RESPONSE_LIMIT,
        "{document} bytes"
    );
    document
}

/// A name of 400 quotes, 1,600 bytes once escaped twice.
fn quoted(tag: &str, i: usize) -> String {
    let tag = format!("{tag}{i}");
    format!("{tag}{}", "\"".repeat(400 - tag.len()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leads_report_over_thousands_of_ad_sets_fits_lambdas_6_mb() {
    let h = Harness::start().await;
    h.put_site("loja-x", "BRL").await;
    let store = h.store();
    let today = h.now() - h.now().rem_euclid(DAY_MS);

    // The catalog, as an unlinked account's purge would find it (no sync
    // needed to name the ads), and a lead of each ad yesterday, as the
    // outbox counts it.
    let entries: Vec<CatalogEntry> = (0..ADS)
        .map(|i| CatalogEntry {
            ad_id: format!("23860{i:07}"),
            ad_account_id: Some("act_555".into()),
            ad_name: Some(quoted("ad", i)),
            adset_id: Some(format!("23850{i:07}")),
            adset_name: Some(quoted("set", i)),
            campaign_id: Some(format!("23840{i:07}")),
            campaign_name: Some(quoted("campaign", i)),
            ad_status: Some("ACTIVE".into()),
            creative_type: Some("IMAGE".into()),
            thumbnail_key: None,
        })
        .collect();
    let unlinked = LeaseCondition::Unlinked {
        site_id: "loja-x".into(),
        ad_account_id: "act_555".into(),
    };
    assert!(
        store
            .catalog()
            .upsert_catalog(&unlinked, &entries, h.now())
            .await
            .expect("the catalog is written")
    );
    let day = today - DAY_MS;
    let rollup = |dim: String, leads: usize| async move {
        store
            .ddb
            .put_item()
            .table_name(&store.names.table)
            .item("pk", s(rollup_pk("loja-x")))
            .item("sk", s(rollup_sk(day, &dim)))
            .item("dayStart", n(day))
            .item("dim", s(&dim))
            .item("leads", n(leads as i64))
            .item("qualified", n(0))
            .item("won", n(0))
            .item("revenueCents", n(0))
            .send()
            .await
            .map(|_| ())
    };
    futures::stream::iter(
        entries
            .iter()
            .map(|e| (format!("a#{}", e.ad_id), 1))
            .chain([("o#ctwa_ad".to_owned(), ADS)]),
    )
    .map(|(dim, leads)| rollup(dim, leads))
    .buffer_unordered(8)
    .try_collect::<Vec<_>>()
    .await
    .expect("the rollups are written");

    let (status, report) = h
        .call(
            "GET",
            &format!(
                "/v1/reports/leads?siteIds=loja-x&from={}&to={today}",
                today - 6 * DAY_MS
            ),
            None,
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report["totals"]["leads"], ADS,
        "the totals count every lead"
    );
    assert_eq!(
        (&report["adsTruncated"], &report["groupsTruncated"]),
        (&serde_json::json!(true), &serde_json::json!(true))
    );
    let campaigns = report["campaigns"].as_array().unwrap();
    assert!(
        (500..ADS).contains(&campaigns.len()),
        "{} campaigns kept",
        campaigns.len()
    );
    // Every campaign kept has its sums, and its ad set but for the last,
    // whose ad set may be the first group that did not fit.
    for (i, c) in campaigns.iter().enumerate() {
        assert_eq!(c["leads"], 1);
        let sets = c["adsets"].as_array().map_or(0, Vec::len);
        assert!(
            sets == 1 || (sets == 0 && i + 1 == campaigns.len()),
            "{i}: {sets} ad sets"
        );
    }
    // What Lambda would measure: the body, escaped into its document.
    let body = report.to_string();
    let document = fitting_document(&report);
    println!(
        "leads report over {ADS} ad sets: {} campaigns kept, {} bytes of body, {document} in Lambda's document",
        campaigns.len(),
        body.len()
    );
}

/// A Page of 250 more forms of about 30 KB of questions each (8 MB in
/// Lambda's document), one of 1.1 MB: each form is kept with its first
/// 64 KB of questions, and the list keeps what fits, the active forms and
/// those with recent leads first, in Meta's order, and says it left forms
/// out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_many_large_forms_lists_within_lambdas_6_mb() {
    let h = Harness::start().await;
    h.fake().tune(|k| k.wide_forms = 250);
    adtrail_tests::capi::loja_with_pixel(&h).await;
    crate::leadads::link_loja_page(&h).await;

    let (status, listed) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/pages/{}/forms", crate::leadads::LOJA_PAGE),
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["formsTruncated"], true);
    let forms = listed["forms"].as_array().unwrap();
    let ids: Vec<&str> = forms
        .iter()
        .map(|f| f["formId"].as_str().unwrap())
        .collect();
    let wide = adtrail_fake_meta::wide_forms(250);
    let active = std::iter::once(adtrail_fake_meta::SAMPLE_FORMS[0].0.to_owned()).chain(
        wide.iter()
            .filter(|(_, _, status)| *status == "ACTIVE")
            .map(|(id, _, _)| id.clone()),
    );
    for id in active {
        assert!(ids.contains(&id.as_str()), "active form {id} listed");
    }
    assert!(
        (100..251).contains(&ids.len()),
        "{} forms listed",
        ids.len()
    );
    let mut in_order = ids.clone();
    in_order.sort();
    assert_eq!(ids, in_order, "in the order Meta listed them");
    // Each wide form whole, but the first: its 1.1 MB of questions, more
    // than a DynamoDB item holds, kept up to 64 KB.
    for f in forms
        .iter()
        .filter(|f| f["formId"] != adtrail_fake_meta::SAMPLE_FORMS[0].0)
    {
        let questions = f["questions"].as_array().unwrap();
        if f["formId"] == wide[0].0 {
            assert!((1..100).contains(&questions.len()), "{}", questions.len());
            let bytes = serde_json::to_string(questions).unwrap().len();
            assert!(bytes <= 64 * 1024, "{bytes}");
        } else {
            assert_eq!(questions.len(), 8, "whole");
        }
    }
    let document = fitting_document(&listed);
    println!(
        "a Page of 251 forms: {} listed, {document} bytes in Lambda's document",
        ids.len()
    );
}
