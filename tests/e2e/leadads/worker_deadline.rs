//! The leadgen worker and the sweeper when Meta is slow past their time.
//! Lambda ends a function at its timeout, whatever it is doing: a batch
//! half-read fails whole, and a sweep ended mid-Page records nothing. Both
//! bind their reads to the invocation's deadline, less the time they keep
//! for their writes, so a slow Meta fails the reads it has no time for and
//! the invocation ends by itself. These stacks give each function 20
//! seconds (the template gives 60 and 120) and Meta's client the 30
//! seconds it has in production.

use std::time::Duration;

use adtrail_domain::time::MINUTE_MS;
use adtrail_fake_meta::Delivery;
use adtrail_local::app::Settings;
use adtrail_tests::*;

use super::{LOJA_PAGE, link_loja_page, submit_on_loja};

/// Loja X linked to its Page, on a stack whose `function` times out
/// after 20 seconds.
async fn linked_with_little_time(function: &'static str) -> Harness {
    let h = Harness::start_with(
        T0,
        Settings {
            timeout: Some(Duration::from_secs(30)),
            function_timeout: Some((function, Duration::from_secs(20))),
            ..Settings::default()
        },
    )
    .await;
    h.put_site("loja-x", "BRL").await;
    h.connect(TOKEN).await;
    link_loja_page(&h).await;
    h
}

/// Meta answers each form lead's read after 4.5 s, so a batch of five
/// would take 22 s of the worker's 20 (its reads get 10: it keeps 10 for
/// its writes). The worker records the leads it has time for, hands the
/// rest back, and ends by itself; they are taken once Meta is quick
/// again. Without the deadline Lambda ended the worker mid-batch and all
/// five came back, the leads already recorded among them, and a Meta that
/// slow would have sent them all to the dead-letter queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_meta_fails_the_form_leads_there_is_no_time_for_not_the_batch() {
    let h = linked_with_little_time("LeadgenWorkerFunction").await;
    let mut ids = vec![];
    for _ in 0..5 {
        ids.push(submit_on_loja(&h, &[("full_name", "Maria Sigilosa")], Delivery::Once).await);
    }
    h.fake().tune(|k| k.latency_ms = 4_500);
    let report = h.runner().drain().await.expect("drain");
    assert!(
        report.delivered >= 1 && report.delivered + report.failed == 5,
        "{report:?}"
    );
    let recorded = |h: &Harness| {
        let (store, ids) = (h.store().clone(), ids.clone());
        async move {
            let mut n = 0;
            for id in &ids {
                let key = format!("meta-lead:{id}");
                n += usize::from(
                    store
                        .leads()
                        .get_lead("loja-x", &key)
                        .await
                        .expect("read")
                        .is_some(),
                );
            }
            n
        }
    };
    assert_eq!(recorded(&h).await, report.delivered);

    h.fake().tune(|k| k.latency_ms = 0);
    h.runner().advance(7 * MINUTE_MS).await.expect("advance");
    let rest = h.runner().drain().await.expect("drain");
    assert_eq!((rest.delivered, rest.failed), (report.failed, 0));
    assert_eq!(recorded(&h).await, 5);
}

/// Meta hangs on the leads of a Page's form while the sweeper reconciles
/// the Page (the sweep's reads get 5 of its 20 seconds: it keeps 15). The
/// Page's reconciliation fails at the deadline and says so on the link,
/// to be tried again, and the sweep ends with its figures. Without the
/// deadline the read waited its 30 s and Lambda ended the sweep at 20,
/// the Page's reconciliation claimed and nothing recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_whose_reconciliation_hangs_ends_in_time_and_records_it() {
    let h = linked_with_little_time("SweeperFunction").await;
    h.fake().tune(|k| {
        k.slow_path = Some("/leads".into());
        k.slow_ms = 60_000;
    });
    let started = std::time::Instant::now();
    let sweep = h.runner().sweep().await.expect("the sweep ends by itself");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(sweep.pages_reconciled, 1, "{sweep:?}");
    let link = h
        .store()
        .pages()
        .page_link(LOJA_PAGE)
        .await
        .expect("read")
        .expect("linked");
    let error = link.last_error.expect("the failure is on the link");
    assert!(error.starts_with("META_UNAVAILABLE"), "{error}");
}
