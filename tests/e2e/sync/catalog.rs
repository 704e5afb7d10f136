//! What a live run reads of the site's catalog: nothing when it learnt what
//! the account's last run saved; when that changed, the entries of the ads
//! it learnt, however many more the site's catalog holds.

use std::collections::BTreeMap;

use adtrail_domain::time::MINUTE_MS;
use adtrail_store::attr::s;
use adtrail_store::keys::catalog_pk;
use adtrail_tests::*;
use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};

/// Ads that no longer deliver, `n` of them, put straight into the site's
/// catalog: years of an agency's campaigns. Their ids sort among those of
/// Loja Principal's own ads (Meta's ids grow with time, and an account's
/// ads of one era sit together), so a read of the range of its ads meets
/// them all.
async fn old_ads(h: &Harness, site: &str, n: usize) {
    let store = h.store();
    let items: Vec<WriteRequest> = (0..n)
        .map(|i| {
            let put = PutRequest::builder()
                .item("pk", s(catalog_pk(site)))
                .item("sk", s(format!("120200000102{i:06}")))
                .item("adAccountId", s("act_1234567890"))
                .item("adName", s(format!("Old campaign · old ad {i}")))
                .item("adsetId", s(format!("4{:06}", i / 10)))
                .item("adsetName", s(format!("Old ad set {}", i / 10)))
                .item("campaignId", s(format!("3{:04}", i / 100)))
                .item("campaignName", s(format!("Old campaign {}", i / 100)))
                .item("adStatus", s("ARCHIVED"))
                .item("creativeType", s("PHOTO"))
                .build()
                .expect("an old ad");
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    for chunk in items.chunks(25) {
        let out = store
            .ddb
            .batch_write_item()
            .request_items(&store.names.table, chunk.to_vec())
            .send()
            .await
            .expect("write old ads");
        assert!(out.unprocessed_items().is_none_or(|u| u.is_empty()));
    }
}

/// The catalog's read units by label (`Query catalog`, `BatchGet
/// catalog`) of the next tick, `minutes` on: the sample agency's four runs.
async fn catalog_reads_of_a_tick(h: &Harness, minutes: i64) -> BTreeMap<String, f64> {
    h.runner()
        .advance(minutes * MINUTE_MS)
        .await
        .expect("advance");
    h.store().counter.reset();
    let tick = h.runner().tick().await.expect("tick");
    assert_eq!(tick.dispatched.leased, 4, "{tick:?}");
    h.store()
        .counter
        .units_by()
        .into_iter()
        .filter(|(label, (_, read, _))| label.ends_with(" catalog") && *read > 0.0)
        .map(|(label, (_, read, _))| (label, read))
        .collect()
}

#[tokio::test]
async fn a_live_run_reads_the_catalog_only_for_what_it_learnt_anew() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.at_first_live_sync().await;
    old_ads(h, "loja-x", 4_000).await;

    // The first live runs learnt other ads than the backfill's last block:
    // each reads its own ads' entries, not the site's 4,000 old ones
    // (about 120 units a run in one query of the whole catalog).
    let first = catalog_reads_of_a_tick(h, 0).await;
    assert!(first.values().sum::<f64>() <= 60.0, "{first:?}");

    // 45 minutes on, the same ads deliver under the same names: the runs
    // saved that last time, and read nothing of the catalog.
    assert_eq!(catalog_reads_of_a_tick(h, 45).await, BTreeMap::new());

    // Two new ads deliver in each account: those runs read their ads'
    // entries again, and the new ads are in the catalog, named.
    h.fake().tune(|k| k.wide_ads = 2);
    let grown = catalog_reads_of_a_tick(h, 45).await;
    assert!(
        !grown.is_empty() && grown.values().sum::<f64>() <= 60.0,
        "{grown:?}"
    );
    let catalog = h.store().catalog().site_catalog("loja-x").await.unwrap();
    let wide: Vec<_> = catalog
        .values()
        .filter(|e| e.ad_name.as_deref().is_some_and(|n| n.contains("wide ad")))
        .collect();
    assert_eq!(wide.len(), 4, "two a Loja X account");
    assert!(wide.iter().all(|e| e.ad_account_id.is_some()));
    assert_eq!(catalog_reads_of_a_tick(h, 45).await, BTreeMap::new());
}

#[tokio::test]
async fn entries_of_reads_a_page_of_the_range_then_what_is_left_alone() {
    let h = Harness::start().await;
    // It counts read units: an injected fault's retried request would
    // read a second time.
    h.runner().stack.cloud.faults.set_share(0.0);
    old_ads(&h, "s1", 4_000).await;
    let id = |i: usize| format!("120200000102{i:06}");
    let existing = [id(0), id(1), id(2), id(3_997), id(3_998), id(3_999)];
    // Absent: one the first page goes past, one past the catalog's end.
    let absent = [format!("{}5", id(1)), id(9_999)];
    let asked = existing.iter().chain(&absent).map(String::as_str).collect();
    // The worker's own clients: its role allows each call, and it is counted.
    let store = h.runner().stack.store_for("SyncWorkerFunction");
    store.counter.reset();
    let found = store.catalog().entries_of("s1", &asked).await.unwrap();
    let mut found_ids: Vec<_> = found.keys().cloned().collect();
    found_ids.sort();
    assert_eq!(found_ids, existing);
    assert!(found.values().all(|e| e.ad_name.is_some()));
    // One page of 80 entries, then the three existing ads and the one
    // absent past the page, alone: the range is 4,000 entries (about 100
    // units in full).
    let units = store.counter.units_by();
    assert_eq!(units["BatchGet catalog"].1, 2.0, "{units:?}");
    assert!(units["Query catalog"].1 <= 4.0, "{units:?}");
}
