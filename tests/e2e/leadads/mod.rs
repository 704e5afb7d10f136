//! Meta Lead Ads: the webhook's doors, the owner's Pages, and the leadgen worker.

mod form_leads;
mod forms;
mod forms_list;
mod forward;
mod pages;
mod reconcile;
pub(crate) mod webhook;
mod worker;
mod worker_deadline;

use adtrail_tests::Harness;

/// Loja X's Page, which can advertise: its leads can be read.
pub(crate) const LOJA_PAGE: &str = "100200300";

/// Links Loja X's Page to the site `loja-x` with the agency's token.
pub(crate) async fn link_loja_page(h: &Harness) {
    h.expect(
        201,
        "PUT",
        &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}"),
        Some(serde_json::json!({"ownerKey": "agency"})),
    )
    .await;
}

/// Submits a lead on Loja X's form with `answers` (question key, value),
/// delivered as asked; answers its `leadgen_id`.
pub(crate) async fn submit_on_loja(
    h: &Harness,
    answers: &[(&str, &str)],
    delivery: adtrail_fake_meta::Delivery,
) -> String {
    h.fake()
        .submit_lead(adtrail_fake_meta::Submission {
            page_id: LOJA_PAGE.into(),
            form_id: adtrail_fake_meta::SAMPLE_FORMS[0].0.into(),
            ad_id: None,
            answers: answers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), vec![(*v).to_owned()]))
                .collect(),
            delivery,
        })
        .await
        .unwrap()
        .leadgen_id
}

/// A form lead on Loja X's Page through the real mains: the API's binary
/// links the Page, the fake announces the lead (its answers personal), the
/// leadgen worker's binary reads and records it. Answers the API's and
/// the worker's answers, and the form's answers (secrets to look for).
pub(crate) async fn form_lead_through(
    h: &Harness,
    api: &adtrail_tests::runtime::Function,
    leadgen: &adtrail_tests::runtime::Function,
) -> (Vec<serde_json::Value>, [&'static str; 3]) {
    use crate::runtime::{api_event, sqs_event};
    use serde_json::json;
    let mut answers = vec![];
    let linked = api
        .invoke(api_event(
            h,
            "PUT",
            &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}"),
            Some(json!({"ownerKey": "agency"})),
        ))
        .await
        .unwrap();
    assert_eq!(linked["statusCode"].as_i64(), Some(201), "{linked}");
    answers.push(linked);
    let form_answers = [
        "Joana Reservada",
        "joana.reservada@example.com",
        "+5511977776666",
    ];
    let fields = ["full_name", "email", "phone_number"];
    let leadgen_id = submit_on_loja(
        h,
        &[
            (fields[0], form_answers[0]),
            (fields[1], form_answers[1]),
            (fields[2], form_answers[2]),
        ],
        adtrail_fake_meta::Delivery::Once,
    )
    .await;
    let queue = h.store().names.leadgen_queue_url.clone().unwrap();
    while let Some(event) = sqs_event(h, &queue).await {
        answers.push(leadgen.invoke(event).await.expect("leadgen"));
    }
    assert!(
        h.store()
            .leads()
            .get_lead("loja-x", &format!("meta-lead:{leadgen_id}"))
            .await
            .unwrap()
            .is_some(),
        "the form lead is on the board"
    );
    (answers, form_answers)
}
