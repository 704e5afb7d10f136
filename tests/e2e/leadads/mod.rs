//! Meta Lead Ads: the webhook's doors, the owner's Pages, and the leadgen worker.

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
