//! A request that runs out of time. Lambda ends the API function at its
//! timeout whatever it is doing, and API Gateway answers without it, so a
//! call to Meta that hangs must fail within the request's time: the route
//! then still has the time to store what it can and to answer in its own
//! words. The local API ends the function as Lambda does; these stacks
//! give it 8 seconds (the template gives 30), of which the calls to Meta
//! get 3 (`adtrail_api::CALLS_RESERVE` keeps 5 for the writes).

use std::time::{Duration, Instant};

use super::*;

const API_TIMEOUT: Duration = Duration::from_secs(8);

/// Longer than the fake Meta's client waits (10 s): a call that hangs.
const HANG_MS: u64 = 20_000;

/// Meta's listing of the owner's Pages hangs. The connect gives up on it
/// within the request's time, keeps the Pages it had, and stores the token
/// with its accounts. Without the deadline the listing waited its 10 s,
/// Lambda ended the function at 8 and API Gateway answered a bare `500`
/// with nothing stored: the owner could not connect until Meta's Pages
/// answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_whose_pages_listing_hangs_is_stored_within_the_requests_time() {
    let h = Harness::start_hurried("ApiFunction", API_TIMEOUT).await;
    h.fake().tune(|k| {
        k.slow_path = Some("/me/accounts".into());
        k.slow_ms = HANG_MS;
    });
    let (status, body) = connect_in_time(&h).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["adAccounts"].as_array().map(Vec::len), Some(4));
    assert_eq!(h.connection("agency").await.accounts.len(), 4);
    let pages = |h: &Harness| {
        let store = h.store().clone();
        async move { store.pages().list_pages("agency").await.expect("read") }
    };
    assert!(pages(&h).await.is_empty(), "no Pages listed yet");

    // Meta's Pages answer again: connecting again lists them.
    h.fake().tune(|k| k.slow_path = None);
    h.connect(TOKEN).await;
    assert!(!pages(&h).await.is_empty());
}

/// Meta hangs altogether: the connect answers `META_UNAVAILABLE` within
/// the request's time and stores nothing. Without the deadline its first
/// call waited 10 s and API Gateway answered a bare `500` at 8.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_to_a_meta_that_hangs_fails_in_adtrails_words_and_stores_nothing() {
    let h = Harness::start_hurried("ApiFunction", API_TIMEOUT).await;
    h.fake().tune(|k| k.latency_ms = HANG_MS);
    let (status, body) = connect_in_time(&h).await;
    assert_eq!((status, code(&body)), (502, "META_UNAVAILABLE"), "{body}");
    let stored = h
        .store()
        .connections()
        .get_connection("agency")
        .await
        .expect("read");
    assert!(stored.is_none(), "nothing stored");
}

/// A Page's forms hang while it is linked. The link is made (Meta was
/// subscribed and the link stored before the forms were read) and
/// answered `201`, the forms left for a refresh. Without the deadline the
/// forms read waited its 10 s and the host got a bare `500` for a link
/// that had been made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_linked_while_its_forms_hang_is_answered_as_linked() {
    let h = Harness::start_hurried("ApiFunction", API_TIMEOUT).await;
    adtrail_tests::capi::loja_with_pixel(&h).await;
    h.fake().tune(|k| {
        k.slow_path = Some("/leadgen_forms".into());
        k.slow_ms = HANG_MS;
    });
    let page = crate::leadads::LOJA_PAGE;
    let path = format!("/v1/sites/loja-x/pages/{page}");
    let (status, body) = in_time(&h, "PUT", &path, json!({"ownerKey": "agency"})).await;
    assert_eq!(status, 201, "{body}");
    let forms_path = format!("/v1/sites/loja-x/pages/{page}/forms");
    let (_, listed) = h.call("GET", &forms_path, None).await;
    assert_eq!(listed["forms"], json!([]), "{listed}");

    // Meta answers again: a refresh reads the forms.
    h.fake().tune(|k| k.slow_path = None);
    let (status, listed) = h.call("POST", &format!("{forms_path}/refresh"), None).await;
    assert_eq!(status, 200, "{listed}");
    assert!(!listed["forms"].as_array().expect("forms").is_empty());
}

/// Calls the API and checks that the answer came within the request's
/// time: the route's, not API Gateway's after the function was ended.
async fn in_time(h: &Harness, method: &str, path: &str, body: Value) -> (u16, Value) {
    let started = Instant::now();
    let answer = h.call(method, path, Some(body)).await;
    let took = started.elapsed();
    assert!(
        took < API_TIMEOUT,
        "{method} {path} answered after {took:?}"
    );
    answer
}

/// The agency connects its token, [`in_time`].
async fn connect_in_time(h: &Harness) -> (u16, Value) {
    let body = json!({"accessToken": TOKEN});
    in_time(h, "PUT", "/v1/meta/connections/agency", body).await
}
