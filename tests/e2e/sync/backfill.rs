//! The backfill and what spend reads while it runs: null until it ends, per
//! currency.

use adtrail_domain::time::{DAY_MS, HOUR_MS, MINUTE_MS};
use adtrail_fake_meta::Knobs;
use adtrail_tests::*;
use serde_json::json;

#[tokio::test]
async fn a_backfill_reads_90_days_in_three_blocks_then_goes_live() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.sync_until_live(10).await;
    three_blocks_then_live_with_the_catalog(h).await;
    live_reads_then_the_daily_and_weekly_resyncs(h).await;
}

/// 12:00Z on June 30th is 09:00 in São Paulo: the same local date. Three
/// 30-day blocks, then live every 45 minutes; the last block read the
/// catalog, thumbnails included; every day sum equals its rows.
async fn three_blocks_then_live_with_the_catalog(h: &Harness) {
    // 12:00Z on June 30th is 09:00 in São Paulo: the same local date.
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![
            ("2026-04-02".to_owned(), "2026-05-01".to_owned()),
            ("2026-05-02".to_owned(), "2026-05-31".to_owned()),
            ("2026-06-01".to_owned(), "2026-06-30".to_owned()),
        ]
    );
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.sync_state.as_str(), "live");
    assert!(link.last_sync_at.is_some() && link.backfill_from.is_none() && link.run_id.is_none());
    assert_eq!(
        link.next_sync_at,
        Some(h.now() + 45 * MINUTE_MS),
        "live: every 45 minutes"
    );
    // The last block read the catalog, thumbnails included.
    let catalog = h.store().catalog().site_catalog("loja-x").await.unwrap();
    assert_eq!(catalog.len(), 48);
    let ad = catalog
        .values()
        .find(|c| c.ad_account_id.as_deref() == Some(LOJA_PRINCIPAL))
        .unwrap();
    assert!(ad.ad_name.is_some() && ad.ad_status.is_some() && ad.creative_type.is_some());
    let key = ad.thumbnail_key.clone().expect("a thumbnail copied");
    assert_eq!(
        &h.store().blobs().get_thumbnail(&key).await.unwrap()[..4],
        b"\x89PNG"
    );
    for (site, account) in [
        ("loja-x", LOJA_PRINCIPAL),
        ("loja-x", LOJA_MANAUS),
        ("pet-mania", PET_EAST),
        ("pet-mania", PET_WEST),
    ] {
        h.assert_sums_match_rows(site, account).await;
    }
}

/// 45 minutes on: today and yesterday. The next local day after 04:00
/// (07:00Z in São Paulo): the daily 7 days and the catalog; a week after
/// the backfill the weekly 28 days.
async fn live_reads_then_the_daily_and_weekly_resyncs(h: &Harness) {
    // 45 minutes on: today and yesterday.
    h.fake().clear_requests();
    h.runner().advance(45 * MINUTE_MS).await.unwrap();
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-29".to_owned(), "2026-06-30".to_owned())]
    );

    // The next local day after 04:00 (07:00Z in São Paulo): the daily 7 days
    // and the catalog; a week after the backfill the weekly 28 days.
    h.fake().clear_requests();
    h.runner()
        .set_clock(T0 + DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await
        .unwrap(); // 07:30Z July 1st
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-25".to_owned(), "2026-07-01".to_owned())]
    );
    assert!(
        h.fake()
            .requests()
            .iter()
            .any(|r| r.path == format!("/v25.0/{LOJA_PRINCIPAL}/ads"))
    );
    h.fake().clear_requests();
    h.runner()
        .set_clock(T0 + 7 * DAY_MS - 5 * HOUR_MS + 30 * MINUTE_MS)
        .await
        .unwrap();
    h.runner().tick().await.unwrap();
    assert_eq!(
        h.insights_ranges(LOJA_PRINCIPAL),
        vec![("2026-06-10".to_owned(), "2026-07-07".to_owned())]
    );
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
}

#[tokio::test]
async fn spend_is_null_until_the_backfill_ends_then_known_per_day() {
    let h = Harness::start().await;
    h.link_agency().await;
    let to = T0 - T0 % DAY_MS;
    let from = to - 29 * DAY_MS;
    let (status, before) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={from}&to={to}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{before}");
    assert_eq!(before["totals"]["spendCents"], json!(null));
    assert_eq!(before["days"].as_array().unwrap().len(), 30);
    assert_eq!(before["days"][0]["spendCents"], json!(null));
    assert_eq!(before["spendCurrency"], json!(null));

    h.sync_until_live(10).await;
    let (_, after) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={from}&to={to}"),
            None,
        )
        .await;
    assert_eq!(after["spendCurrency"], "BRL");
    assert_eq!(after["currencyMismatch"], false);
    let days = after["days"].as_array().unwrap();
    let sum: i64 = days.iter().map(|d| d["spendCents"].as_i64().unwrap()).sum();
    assert_eq!(after["totals"]["spendCents"].as_i64().unwrap(), sum);
    assert!(sum > 0);
    let ads: i64 = after["ads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["spendCents"].as_i64().unwrap())
        .sum();
    assert_eq!(ads, sum, "the per-ad list and the per-day sums agree");
    assert!(after["ads"][0]["adName"].is_string());
    // A range before any spend: zero, not null, since the accounts are synced.
    let old = from - 200 * DAY_MS;
    let (_, empty) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={old}&to={old}"),
            None,
        )
        .await;
    assert_eq!(empty["totals"]["spendCents"], json!(0));
}

#[tokio::test]
async fn an_account_billing_in_another_currency_gives_null_spend_with_a_mismatch() {
    let h = Harness::start().await;
    h.call(
        "PUT",
        "/v1/sites/loja-x",
        Some(json!({"name": "Loja X", "currency": "BRL"})),
    )
    .await;
    h.connect(TOKEN).await;
    for account in [LOJA_PRINCIPAL, PET_EAST] {
        let (s, b) = h
            .call(
                "PUT",
                &format!("/v1/sites/loja-x/ad-accounts/{account}"),
                Some(json!({"ownerKey": "agency"})),
            )
            .await;
        assert_eq!(s, 201, "{b}");
    }
    for _ in 0..4 {
        h.runner().tick().await.unwrap();
        h.runner().advance(2_000).await.unwrap();
    }
    let day = T0 - T0 % DAY_MS;
    let (_, spend) = h
        .call(
            "GET",
            &format!("/v1/sites/loja-x/spend?from={}&to={day}", day - 6 * DAY_MS),
            None,
        )
        .await;
    assert_eq!(spend["currencyMismatch"], true);
    assert_eq!(spend["spendCurrency"], json!(null));
    assert_eq!(spend["totals"]["spendCents"], json!(null));
    assert!(spend["totals"]["impressions"].as_i64().unwrap() > 0);
    for account in spend["adAccounts"].as_array().unwrap() {
        assert!(
            account["spendCents"].as_i64().unwrap() > 0,
            "each account's own figures are still shown"
        );
    }
}

#[tokio::test]
async fn a_range_with_too_much_data_is_halved_and_a_day_over_the_cap_is_truncated() {
    let h = Harness::start().await;
    h.link_agency().await;
    // About 19 rows an account-day: 200 rows is about 10 days.
    h.fake().set_knobs(Knobs {
        row_cap: Some(200),
        ..Knobs::default()
    });
    h.runner().tick().await.unwrap();
    let ranges = h.insights_ranges(LOJA_PRINCIPAL);
    assert_eq!(
        ranges[0],
        ("2026-04-02".to_owned(), "2026-05-01".to_owned())
    );
    assert_eq!(
        ranges[1],
        ("2026-04-02".to_owned(), "2026-04-16".to_owned())
    );
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.backfill_from.as_deref(), Some("2026-05-02"));
    assert_eq!(link.last_error, None);
    h.assert_sums_match_rows("loja-x", LOJA_PRINCIPAL).await;
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        rows.len() > 400,
        "every day of the block was read: {}",
        rows.len()
    );

    // A cap below one day's rows: down to single days, kept what came, flagged.
    h.fake().set_knobs(Knobs {
        row_cap: Some(5),
        ..Knobs::default()
    });
    h.runner().advance(2_000).await.unwrap();
    h.runner().tick().await.unwrap();
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert!(
        link.last_error
            .as_deref()
            .unwrap()
            .starts_with("META_TRUNCATED: "),
        "{:?}",
        link.last_error
    );
    assert!(
        h.insights_ranges(LOJA_PRINCIPAL)
            .iter()
            .any(|(s, u)| s == u),
        "single days were asked"
    );
}

#[tokio::test]
async fn the_fake_meta_is_as_strict_as_meta() {
    let h = Harness::start().await;
    let base = h.fake().url();
    let http = reqwest::Client::new();
    let range =
        url::form_urlencoded::byte_serialize(br#"{"since":"2026-06-01","until":"2026-06-02"}"#)
            .collect::<String>();
    let good = format!(
        "/v25.0/{LOJA_PRINCIPAL}/insights?level=ad&time_increment=1&fields=ad_id,spend&time_range={range}"
    );
    let cases = [
        (good.replace("/v25.0", ""), Some(TOKEN), 2635),
        (format!("{good}&access_token={TOKEN}"), None, 100),
        (good.clone(), None, 2500),
        (
            good.replace("level=ad", "level=adset&x=1")
                .replace("&x=1", ""),
            Some(TOKEN),
            100,
        ),
        (
            good.replace("fields=ad_id,spend", "fields=ad_id,secret"),
            Some(TOKEN),
            100,
        ),
        (good.replace(&range, "2026-06-01"), Some(TOKEN), 100),
        (good.clone(), Some("EAAB-invalid-token"), 190),
    ];
    for (path, token, code) in cases {
        let mut req = http.get(format!("{base}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let body: serde_json::Value = req.send().await.unwrap().json().await.unwrap();
        assert_eq!(body["error"]["code"].as_i64(), Some(code), "{path}: {body}");
    }
    let ok: serde_json::Value = http
        .get(format!("{base}{good}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(ok["data"].as_array().unwrap().len() > 10);
}

/// Meta answers "reduce the amount of data" (code 1) to an ads listing
/// with heavy creatives: the page's `limit` shrinks and the listing goes
/// on, rather than failing the run every time.
#[tokio::test]
async fn an_ads_page_meta_finds_too_big_shrinks_and_the_catalog_completes() {
    let h = Harness::start().await;
    h.fake().tune(|k| k.ads_limit_cap = Some(10));
    h.link_agency().await;
    h.sync_until_live(10).await;
    let link = h.link("loja-x", LOJA_PRINCIPAL).await;
    assert_eq!(link.sync_state.as_str(), "live");
    assert_eq!(
        h.store()
            .catalog()
            .site_catalog("loja-x")
            .await
            .unwrap()
            .len(),
        48,
        "every ad, in pages of at most 10"
    );
    let limits: Vec<String> = h
        .fake()
        .requests()
        .iter()
        .filter(|r| r.path.ends_with(&format!("{LOJA_PRINCIPAL}/ads")))
        .map(|r| {
            url_decode(&r.query)
                .get("limit")
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert!(
        limits.starts_with(&[
            "200".into(),
            "100".into(),
            "50".into(),
            "25".into(),
            "12".into(),
            "6".into()
        ]),
        "{limits:?}"
    );
}

#[tokio::test]
async fn the_runs_of_one_batch_open_their_owners_token_once() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.store().counter.reset();
    // The four accounts are due at once: one batch of the sync queue.
    let tick = h.runner().tick().await.unwrap();
    assert_eq!(tick.dispatched.leased, 4);
    assert_eq!(tick.queues.batches, 1, "{tick:?}");
    assert_eq!(
        h.store().counter.get("kms"),
        1,
        "one decrypt for the agency's four runs"
    );
    for (site, account) in [("loja-x", LOJA_PRINCIPAL), ("pet-mania", PET_WEST)] {
        assert!(
            !h.all_rows(site, account).await.is_empty(),
            "{account} read"
        );
    }
}
