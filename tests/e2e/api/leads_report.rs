//! The leads report: leads by origin and campaign → ad set → ad next to
//! the spend, null-safe across currencies, within its budgets.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::code;

/// The ad rows of a leads report, flattened from its campaign tree.
fn report_ads(r: &Value) -> Vec<Value> {
    r["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["adsets"].as_array().unwrap().clone())
        .flat_map(|s| s["ads"].as_array().unwrap().clone())
        .collect()
}

/// The report's range and what the stored rows say, to compare with.
struct Fixture {
    from: i64,
    today: i64,
    /// The sample's first ad, which brought two leads and a sale.
    ad: String,
    /// Loja X's spend, impressions and clicks over the range.
    site_spend: (i64, i64, i64),
    /// Loja X's spend per ad over the range.
    by_ad: std::collections::BTreeMap<String, i64>,
}

impl Fixture {
    fn path(&self, sites: &str) -> String {
        format!(
            "/v1/reports/leads?siteIds={sites}&from={}&to={}",
            self.from, self.today
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leads_report_puts_spend_next_to_leads() {
    let started = Harness::start().await;
    let h = &started;
    let f = record_leads_over_synced_spend(h).await;
    one_site_with_its_tree_and_thumbnails(h, &f).await;
    two_currencies_and_a_site_without_accounts(h, &f).await;
    past_the_budgets(h, &f).await;
    bad_ranges_and_lists_name_the_field(h, &f).await;
}

/// The agency synced, Loja Z without accounts, four leads (two from an
/// ad of Loja X, one of them won), and the stored spend.
async fn record_leads_over_synced_spend(h: &Harness) -> Fixture {
    h.link_agency().await;
    h.sync_until_live(10).await;
    h.expect(
        200,
        "PUT",
        "/v1/sites/loja-z",
        Some(json!({"name": "Loja Z", "currency": "BRL"})),
    )
    .await;
    let ad = adtrail_fake_meta::sample_accounts()
        .into_iter()
        .find(|a| a.id == LOJA_PRINCIPAL)
        .unwrap()
        .ads[0]
        .id
        .clone();
    let now = h.now();
    let today = now - now.rem_euclid(86_400_000);
    let from = today - 6 * 86_400_000;
    for (site, key, at, origin) in [
        ("loja-x", "ana", now, "ctwa_ad"),
        ("loja-x", "carl", now - 86_400_000, "ctwa_ad"),
        ("loja-x", "bia", now, "organic"),
        ("loja-z", "zeca", now, "organic"),
    ] {
        let mut body = json!({"leadKey": key, "changeId": format!("{key}-new"), "occurredAt": at, "origin": origin});
        if origin == "ctwa_ad" {
            body["adId"] = json!(ad);
        }
        h.expect(201, "POST", &format!("/v1/sites/{site}/leads"), Some(body))
            .await;
    }
    h.expect(200, "POST",
            "/v1/sites/loja-x/leads/ana/stage",
            Some(json!({"changeId": "ana-won", "occurredAt": now, "stage": "won", "revenueCents": 45_990}))).await;

    let mut site_spend = (0, 0, 0);
    let mut by_ad: std::collections::BTreeMap<String, i64> = Default::default();
    for acct in [LOJA_PRINCIPAL, LOJA_MANAUS] {
        for (_, f) in h
            .store()
            .spend()
            .day_sums("loja-x", acct, from, today)
            .await
            .unwrap()
        {
            site_spend.0 += f.spend_cents;
            site_spend.1 += f.impressions;
            site_spend.2 += f.clicks;
        }
        for r in h.all_rows("loja-x", acct).await {
            if (from..=today).contains(&r.day_start) {
                *by_ad.entry(r.ad_id).or_default() += r.figures.spend_cents;
            }
        }
    }
    assert!(site_spend.0 > 0, "the sample spends in the last week");
    Fixture {
        from,
        today,
        ad,
        site_spend,
        by_ad,
    }
}

async fn one_site_with_its_tree_and_thumbnails(h: &Harness, f: &Fixture) {
    let (s, r) = h.call("GET", &f.path("loja-x"), None).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        (
            r["totals"]["leads"].clone(),
            r["totals"]["won"].clone(),
            r["totals"]["revenueCents"].clone(),
            r["totals"]["spendCents"].clone(),
            r["totals"]["impressions"].clone(),
            r["totals"]["clicks"].clone(),
        ),
        (
            json!(3),
            json!(1),
            json!(45_990),
            json!(f.site_spend.0),
            json!(f.site_spend.1),
            json!(f.site_spend.2)
        ),
        "{r}"
    );
    assert_eq!(
        (
            r["spendCurrency"].clone(),
            r["currencyMismatch"].clone(),
            r["spendIncomplete"].clone()
        ),
        (json!("BRL"), json!(false), json!(false))
    );
    assert!(
        r["totals"].get("costPerLeadCents").is_none(),
        "totals include organic leads: {r}"
    );
    let origin = |name: &str| {
        r["origins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["origin"] == name)
            .cloned()
            .unwrap()
    };
    let paid = origin("ctwa_ad");
    assert_eq!(
        (
            paid["leads"].clone(),
            paid["spendCents"].clone(),
            paid["costPerLeadCents"].clone()
        ),
        (
            json!(2),
            json!(f.site_spend.0),
            json!((f.site_spend.0 + 1) / 2)
        ),
        "{r}"
    );
    let organic = origin("organic");
    assert_eq!(
        (
            organic["leads"].clone(),
            organic["spendCents"].clone(),
            organic["costPerLeadCents"].clone()
        ),
        (json!(1), Value::Null, Value::Null),
        "{r}"
    );
    ads_tree_and_thumbnails(h, &r, f).await;
}

/// Every ad that spent is listed, with or without leads; the tree sums
/// to the site's spend; each ad's thumbnail comes from the private bucket
/// through a signed URL; the site's own line.
async fn ads_tree_and_thumbnails(h: &Harness, r: &Value, f: &Fixture) {
    let ads = report_ads(r);
    let listed: std::collections::BTreeSet<String> = ads
        .iter()
        .map(|a| a["adId"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: std::collections::BTreeSet<String> = f.by_ad.keys().cloned().collect();
    expected.insert(f.ad.clone());
    assert_eq!(listed, expected);
    let tree_spend: i64 = r["campaigns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["spendCents"].as_i64().unwrap())
        .sum();
    assert_eq!(tree_spend, f.site_spend.0);
    let burner = ads
        .iter()
        .find(|a| a["leads"] == 0 && a["spendCents"].as_i64().unwrap_or(0) > 0)
        .expect("an ad that spent without bringing a lead");
    assert!(burner["costPerLeadCents"].is_null(), "{burner}");
    let row = ads.iter().find(|a| a["adId"] == f.ad.as_str()).unwrap();
    let ad_spend = f.by_ad.get(&f.ad).copied().unwrap_or(0);
    assert_eq!(
        (
            row["siteId"].clone(),
            row["leads"].clone(),
            row["won"].clone(),
            row["spendCents"].clone()
        ),
        (json!("loja-x"), json!(2), json!(1), json!(ad_spend)),
        "{row}"
    );
    assert!(
        row["adStatus"].is_string() && row["creativeType"].is_string(),
        "{row}"
    );
    if ad_spend > 0 {
        assert_eq!(
            row["returnOnSpend"].as_f64().unwrap(),
            45_990.0 / ad_spend as f64
        );
    }
    // The thumbnail comes from the private bucket through a signed URL.
    let url = row["thumbnailUrl"].as_str().expect("a thumbnail URL");
    assert!(url.contains("X-Amz-Signature="), "{url}");
    let got = reqwest::get(url).await.unwrap();
    assert_eq!(got.status(), 200);
    let key = adtrail_store::blobs::thumbnail_key("loja-x", &f.ad);
    assert_eq!(
        got.bytes().await.unwrap().to_vec(),
        h.store().blobs().get_thumbnail(&key).await.unwrap()
    );
    let site = &r["bySite"][0];
    assert_eq!(
        (
            site["siteId"].clone(),
            site["leads"].clone(),
            site["paid"]["leads"].clone(),
            site["spendCents"].clone(),
            site["paid"]["costPerSaleCents"].clone(),
        ),
        (
            json!("loja-x"),
            json!(3),
            json!(2),
            json!(f.site_spend.0),
            json!(f.site_spend.0)
        ),
        "{site}"
    );
}

/// Two currencies: no spend is summed, each site keeps its own; a site
/// with no account is unknown, not zero; request order is kept.
async fn two_currencies_and_a_site_without_accounts(h: &Harness, f: &Fixture) {
    let (s, r) = h
        .call("GET", &f.path("pet-mania,loja-x,loja-z"), None)
        .await;
    assert_eq!(s, 200, "{r}");
    let sites: Vec<&str> = r["bySite"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["siteId"].as_str().unwrap())
        .collect();
    assert_eq!(sites, ["pet-mania", "loja-x", "loja-z"]);
    assert_eq!(
        (
            r["currencyMismatch"].clone(),
            r["spendCurrency"].clone(),
            r["totals"]["spendCents"].clone(),
            r["totals"]["leads"].clone()
        ),
        (json!(true), Value::Null, Value::Null, json!(4)),
        "{r}"
    );
    assert_eq!(r["bySite"][0]["spendCurrency"], "USD");
    assert!(r["bySite"][0]["spendCents"].as_i64().unwrap() > 0);
    assert_eq!(r["bySite"][1]["spendCents"], json!(f.site_spend.0));
    assert_eq!(
        (
            r["bySite"][2]["spendCents"].clone(),
            r["bySite"][2]["spendCurrency"].clone(),
            r["bySite"][2]["currencyMismatch"].clone(),
            r["bySite"][2]["leads"].clone()
        ),
        (Value::Null, Value::Null, json!(false), json!(1))
    );
    let ads = report_ads(&r);
    assert!(
        ads.iter()
            .all(|a| a["spendCents"].is_null() && a["costPerLeadCents"].is_null())
    );
    assert!(
        ads.iter()
            .any(|a| a["impressions"].as_i64().unwrap_or(0) > 0)
    );
    // A site with no account alone: spend unknown everywhere.
    let (_, r) = h.call("GET", &f.path("loja-z"), None).await;
    assert_eq!(
        (
            r["totals"]["spendCents"].clone(),
            r["spendCurrency"].clone(),
            r["campaigns"].clone()
        ),
        (Value::Null, Value::Null, json!([])),
        "{r}"
    );
}

/// Past the per-ad budget the tree's spend is unknown and the totals stay
/// exact; past the day budget, every spend; past the rollup budget the
/// report fails rather than count short.
async fn past_the_budgets(h: &Harness, f: &Fixture) {
    let limits = |rollup_rows, day_rows, ad_rows| adtrail_api::ReportLimits {
        rollup_rows,
        day_rows,
        ad_rows,
    };
    let (s, r) = h
        .call_with_limits(limits(12_000, 12_000, 5), "GET", &f.path("loja-x"))
        .await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(
        (
            r["spendIncomplete"].clone(),
            r["totals"]["spendCents"].clone()
        ),
        (json!(true), json!(f.site_spend.0))
    );
    assert!(
        report_ads(&r).iter().all(|a| a["spendCents"].is_null()),
        "{r}"
    );
    let (_, r) = h
        .call_with_limits(limits(12_000, 3, 12_000), "GET", &f.path("loja-x"))
        .await;
    assert_eq!(
        (
            r["spendIncomplete"].clone(),
            r["totals"]["spendCents"].clone(),
            r["bySite"][0]["spendCents"].clone(),
            r["totals"]["leads"].clone()
        ),
        (json!(true), Value::Null, Value::Null, json!(3)),
        "{r}"
    );
    let (s, e) = h
        .call_with_limits(limits(2, 12_000, 12_000), "GET", &f.path("loja-x"))
        .await;
    assert_eq!((s, code(&e)), (422, "REPORT_INCOMPLETE"), "{e}");
}

/// Bad ranges and lists name the field.
async fn bad_ranges_and_lists_name_the_field(h: &Harness, f: &Fixture) {
    let (from, today) = (f.from, f.today);
    for (q, field) in [
        (
            format!(
                "siteIds=loja-x&from={}&to={today}",
                today - 366 * 86_400_000
            ),
            "to",
        ),
        (
            format!("siteIds=loja-x,loja-x&from={from}&to={today}"),
            "siteIds",
        ),
        (
            format!("siteIds=loja-x&from={}&to={today}", from + 1),
            "from",
        ),
        (
            format!("siteIds=loja-x&from={from}&to={today}&adId=1"),
            "adId",
        ),
    ] {
        let (s, e) = h.call("GET", &format!("/v1/reports/leads?{q}"), None).await;
        assert_eq!((s, code(&e)), (400, "INVALID_ARGUMENT"), "{q}: {e}");
        assert!(
            e["error"]["message"].as_str().unwrap().starts_with(field),
            "{e}"
        );
    }
}
