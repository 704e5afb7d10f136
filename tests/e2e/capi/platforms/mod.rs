//! The other platforms through the queues: each platform's wire payload,
//! its batch semantics when one event is invalid, a refused credential
//! stopping that destination only, test modes, and the reads each
//! destination gets. One module per platform; the set-ups here.

mod ages;
mod google;
mod leads;
mod pinterest_snap;
mod reads;
mod tiktok;

use adtrail_fake_platforms::{
    GOOGLE_CLIENT_ID, GOOGLE_CLIENT_SECRET, GOOGLE_REFRESH_TOKEN, PINTEREST_TOKEN, SNAP_TOKEN,
    TIKTOK_TOKEN,
};
use adtrail_tests::capi::*;
use adtrail_tests::*;
use serde_json::{Value, json};

pub(super) async fn post(h: &Harness, events: Vec<Value>) -> Value {
    post_events(h, events).await
}

/// The ids of every event the other platforms took, sorted.
pub(super) fn taken_ids(h: &Harness) -> Vec<String> {
    let mut ids: Vec<String> = h
        .platforms()
        .accepted()
        .into_iter()
        .map(|a| a.event_id)
        .collect();
    ids.sort();
    ids
}

/// Loja X with its pixel and a TikTok destination in test mode.
pub(super) async fn with_tiktok(h: &Harness) {
    loja_with_pixel(h).await;
    add_tiktok(h, "tiktok-br", "C4LOJAX01", Some("TEST9")).await;
}

/// Registers a TikTok destination at Loja X.
pub(super) async fn add_tiktok(h: &Harness, slug: &str, pixel_code: &str, test: Option<&str>) {
    h.expect(
        201,
        "PUT",
        &format!("/v1/sites/loja-x/destinations/{slug}"),
        Some(json!({
        "platform": "tiktok", "pixelCode": pixel_code, "testEventCode": test,
        "credentials": {"accessToken": TIKTOK_TOKEN}})),
    )
    .await;
}

/// Loja X with Pinterest and Snap destinations (Pinterest in test mode).
pub(super) async fn with_pinterest_and_snap(h: &Harness, snap_validate: bool) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/pins",
        Some(json!({
        "platform": "pinterest", "adAccountId": "549755885175", "testMode": true,
        "credentials": {"accessToken": PINTEREST_TOKEN}})),
    )
    .await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/snap",
        Some(json!({
        "platform": "snap", "pixelId": SNAP_PIXEL, "testMode": snap_validate,
        "credentials": {"accessToken": SNAP_TOKEN}})),
    )
    .await;
}

pub(super) const SNAP_PIXEL: &str = "4a5b8c1d-0e2f-4a6b-8c9d-0e1f2a3b4c5d";

/// Loja X with a Google destination: purchases and leads each to their
/// conversion action.
pub(super) async fn with_google(h: &Harness, validate_only: bool) {
    loja_with_pixel(h).await;
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/google-ads",
        Some(json!({
        "platform": "google", "operatingAccount": "123-456-7890", "loginAccount": "9876543210",
        "conversionActions": {"purchase": "555001", "lead": "555002"}, "testMode": validate_only,
        "credentials": {"clientId": GOOGLE_CLIENT_ID, "clientSecret": GOOGLE_CLIENT_SECRET,
                        "refreshToken": GOOGLE_REFRESH_TOKEN}})),
    )
    .await;
}

/// `n` purchases (`o-0`, `o-1`, …) posted now, the platforms calling
/// `reject` invalid.
pub(super) async fn post_rejecting(h: &Harness, n: usize, reject: &str) {
    h.platforms().set_knobs(adtrail_fake_platforms::Knobs {
        reject_event_ids: vec![reject.into()],
        ..adtrail_fake_platforms::Knobs::default()
    });
    let now = h.now();
    post(
        h,
        (0..n).map(|i| purchase(&format!("o-{i}"), now)).collect(),
    )
    .await;
}
