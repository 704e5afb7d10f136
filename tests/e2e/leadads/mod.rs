//! Meta Lead Ads: the webhook's doors, the owner's Pages, and the leadgen worker.

mod form_leads;
mod forms;
mod forward;
mod pages;
mod reconcile;
pub(crate) mod webhook;
mod worker;

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
