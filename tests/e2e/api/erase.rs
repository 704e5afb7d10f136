//! Erasing a site: `DELETE /v1/sites/{siteId}` takes the site away at once
//! (every route answers `404` for it), unlinks its accounts and its Page,
//! removes its pixel, and the sweeper deletes the rest in batches until
//! nothing of the site is left in the table; its thumbnails are tagged for
//! the bucket's lifecycle rule. Another site keeps everything.

use adtrail_domain::time::MINUTE_MS;
use adtrail_store::blobs::UNREFERENCED_TAG;
use adtrail_tests::capi::{meta_for, record};
use adtrail_tests::*;
use serde_json::{Value, json};

use super::code;

/// Loja X with everything a site can have: synced accounts (spend, sums,
/// catalog, thumbnails), a pixel, a board and its map, leads and their
/// sent conversions, a destination, a posted event, its Page linked with a
/// form lead; Pet Mania synced beside it.
async fn a_site_with_everything(h: &Harness) -> Vec<String> {
    h.link_agency().await;
    h.sync_until_live(10).await;
    adtrail_tests::capi::loja_with_pixel(h).await;
    for i in 0..3 {
        let key = format!("lead-{i}");
        record(
            h,
            &key,
            &format!("c{i}"),
            json!({"column": "agendado", "meta": meta_for(&key)}),
        )
        .await;
    }
    h.expect(
        201,
        "PUT",
        "/v1/sites/loja-x/destinations/tiktok-br",
        Some(json!({"platform": "tiktok", "pixelCode": "C4ERASE",
            "credentials": {"accessToken": adtrail_fake_platforms::TIKTOK_TOKEN}})),
    )
    .await;
    // Two events for the pixel and TikTok: four rows, watched by a send
    // batch.
    let event = |id: &str| {
        json!({"eventId": id, "event": "purchase",
        "occurredAt": h.now(), "actionSource": "website",
        "eventSourceUrl": "https://loja-x.example/checkout", "valueCents": 1990,
        "currency": "BRL", "contact": {"email": "erase.me@example.com"}})
    };
    let purchase = json!({"events": [event("order-erase"), event("order-erase-2")]});
    h.expect(202, "POST", "/v1/sites/loja-x/events", Some(purchase))
        .await;
    crate::leadads::link_loja_page(h).await;
    crate::leadads::submit_on_loja(
        h,
        &[("full_name", "Ana Apagada")],
        adtrail_fake_meta::Delivery::Once,
    )
    .await;
    h.runner().drain().await.unwrap();
    h.store()
        .catalog()
        .site_catalog("loja-x")
        .await
        .unwrap()
        .values()
        .filter_map(|c| c.thumbnail_key.clone())
        .collect()
}

/// The items of the table that name `site`: as a value, or as a key's
/// part (`conv#<site>`, `count#<site>#0`).
async fn items_naming(h: &Harness, site: &str) -> Vec<String> {
    h.table_text()
        .await
        .lines()
        .filter(|l| {
            l.contains(&format!("\"{site}\""))
                || l.contains(&format!("{site}#"))
                || l.contains(&format!("#{site}\""))
        })
        .map(|l| l.chars().take(200).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erased_site_leaves_nothing_and_its_neighbour_everything() {
    let started = Harness::start().await;
    let h = &started;
    let thumbnails = a_site_with_everything(h).await;
    assert!(!thumbnails.is_empty(), "the sync copied thumbnails");
    assert!(!items_naming(h, "loja-x").await.is_empty());
    let pet_before = items_naming(h, "pet-mania").await.len();

    // A dashboard may not erase a site; the host may.
    let dash = h
        .app
        .local
        .keys
        .sign(json!({"sub": "d", "scope": "adtrail:configure", "sites": ["loja-x"]}));
    let (s, _) = h
        .call_as(Some(&dash), "DELETE", "/v1/sites/loja-x", None)
        .await;
    assert_eq!(s, 403);
    let erasing = h.expect(202, "DELETE", "/v1/sites/loja-x", None).await;
    assert_eq!(
        (&erasing["siteId"], &erasing["erasing"]),
        (&json!("loja-x"), &json!(true)),
        "{erasing}"
    );
    // Gone at once for every route: the site and each of its lists.
    for path in [
        "",
        "/destinations",
        "/event-map",
        "/conversions",
        "/spend?from=0&to=0",
        "/form-leads",
    ] {
        let (s, e) = h
            .call("GET", &format!("/v1/sites/loja-x{path}"), None)
            .await;
        assert_eq!((s, code(&e)), (404, "NOT_FOUND"), "GET …{path}: {e}");
    }
    let (s, _) = record(h, "late", "c-late", json!({"meta": meta_for("late")})).await;
    assert_eq!(s, 404, "no lead is recorded on an erased site");
    let listed = h.expect(200, "GET", "/v1/sites", None).await;
    assert!(!listed.to_string().contains("loja-x"), "{listed}");
    assert!(!h.fake().page_subscribed(crate::leadads::LOJA_PAGE));
    erase_in_steps(h, "loja-x").await;
    let left = items_naming(h, "loja-x").await;
    assert!(left.is_empty(), "nothing of the site remains: {left:#?}");
    for key in &thumbnails {
        let tags = h.store().blobs().thumbnail_tags(key).await.unwrap();
        assert!(
            tags.contains(&(UNREFERENCED_TAG.0.into(), UNREFERENCED_TAG.1.into())),
            "{key}: {tags:?}"
        );
    }
    let (s, e) = h.call("DELETE", "/v1/sites/loja-x", None).await;
    assert_eq!((s, code(&e)), (404, "NOT_FOUND"), "erased: {e}");
    assert_eq!(
        items_naming(h, "pet-mania").await.len(),
        pet_before,
        "the neighbour keeps every item"
    );
    // The name may be registered again, from nothing.
    h.put_site("loja-x", "BRL").await;
    let (_, spend) = h
        .call("GET", "/v1/sites/loja-x/spend?from=0&to=0", None)
        .await;
    assert_eq!(spend["adAccounts"], json!([]), "{spend}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_made_as_the_site_went_is_unlinked_by_the_erasure() {
    let started = Harness::start().await;
    let h = &started;
    h.put_site("loja-y", "BRL").await;
    h.connect(TOKEN).await;
    // A link a request made between the route's unlinking and the site's
    // going (it read the site before): the erasure finds it and unlinks it
    // as an unlink does, its claim released.
    let late = adtrail_store::connections::ListedAccount {
        ad_account_id: "act_5550001".into(),
        name: "Late".into(),
        currency: "BRL".into(),
        timezone: "America/Sao_Paulo".into(),
    };
    h.store()
        .links()
        .link_account("loja-y", "agency", &late, h.now())
        .await
        .unwrap();
    h.store()
        .sites()
        .begin_erase("loja-y", vec![], h.now())
        .await
        .unwrap();
    erase_in_steps(h, "loja-y").await;
    assert!(
        h.store()
            .links()
            .account_claims(&["act_5550001".to_owned()])
            .await
            .unwrap()
            .is_empty(),
        "the late link's claim is released"
    );
    assert!(items_naming(h, "loja-y").await.is_empty());
    // The account may feed another site now.
    h.put_site("loja-z", "BRL").await;
    h.store()
        .links()
        .link_account("loja-z", "agency", &late, h.now())
        .await
        .unwrap();
}

/// Sweeps until the erasure ends, its progress growing on the way (asked
/// again, the route answers it), the grace period passing on the clock.
async fn erase_in_steps(h: &Harness, site: &str) {
    let mut deleted = 0;
    for round in 0..40 {
        let report = h.runner().sweep().await.unwrap();
        if report.erasures_done == 1 {
            return;
        }
        let (s, progress): (u16, Value) =
            h.call("DELETE", &format!("/v1/sites/{site}"), None).await;
        assert_eq!(s, 202, "round {round}: {progress}");
        let now = progress["deletedItems"].as_i64().unwrap();
        assert!(now >= deleted, "{progress}");
        deleted = now;
        h.runner().advance(MINUTE_MS).await.unwrap();
    }
    panic!("the erasure did not end in 40 sweeps ({deleted} items deleted)");
}
