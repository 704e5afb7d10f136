//! The daily report: leads by cohort next to the spend, null-safe across
//! currencies, within its budgets.

use adtrail_tests::*;
use serde_json::{Value, json};

use super::code;

/// The report's two days and the ad that brought Ana.
struct Days {
    ad: String,
    today: i64,
    yesterday: i64,
}

impl Days {
    /// The daily report over the two days, with `q` added to its query.
    async fn report(&self, h: &Harness, q: String) -> (u16, Value) {
        let path = format!(
            "/v1/reports/daily?siteIds=loja-x&from={}&to={}{q}",
            self.yesterday, self.today
        );
        h.call("GET", &path, None).await
    }

    /// Loja X's spend on `day`, from the stored day sums.
    async fn site_spend(&self, h: &Harness, day: i64) -> i64 {
        let mut total = 0;
        for acct in [LOJA_PRINCIPAL, LOJA_MANAUS] {
            total += h
                .store()
                .spend()
                .day_sums("loja-x", acct, day, day)
                .await
                .unwrap()
                .values()
                .map(|f| f.spend_cents)
                .sum::<i64>();
        }
        total
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_report_counts_by_cohort_next_to_the_spend() {
    let started = Harness::start().await;
    let h = &started;
    h.link_agency().await;
    h.sync_until_live(10).await;
    let d = three_leads_two_sales(h).await;
    leads_land_on_the_day_they_arrived(h, &d).await;
    origins_costs_and_the_return(h, &d).await;
    one_ads_leads_and_its_own_spend(h, &d).await;
    bad_filters_currencies_and_a_removed_lead(h, &d).await;
}

/// Carl yesterday, Ana (from an ad) and Bia today; Ana and Carl won (Carl's
/// sale today lands on yesterday, his cohort), Bia qualified.
async fn three_leads_two_sales(h: &Harness) -> Days {
    let ad = adtrail_fake_meta::sample_accounts()
        .into_iter()
        .find(|a| a.id == LOJA_PRINCIPAL)
        .unwrap()
        .ads[0]
        .id
        .clone();
    let now = h.now();
    let today = now - now.rem_euclid(86_400_000);
    let yesterday = today - 86_400_000;
    let lead = |key: &str, at: i64, origin: &str| {
        let mut b = json!({"leadKey": key, "changeId": format!("{key}-new"), "occurredAt": at, "origin": origin});
        if origin == "ctwa_ad" {
            b["adId"] = json!(ad);
        }
        b
    };
    for (key, at, origin) in [
        ("carl", now - 86_400_000, "organic"),
        ("ana", now, "ctwa_ad"),
        ("bia", now, "organic"),
    ] {
        h.expect(
            201,
            "POST",
            "/v1/sites/loja-x/leads",
            Some(lead(key, at, origin)),
        )
        .await;
    }
    for (key, body) in [
        ("ana", json!({"stage": "won", "revenueCents": 45_990})),
        ("bia", json!({"stage": "qualified"})),
        // Carl arrived yesterday: his sale today lands on yesterday.
        ("carl", json!({"stage": "won", "revenueCents": 1_000})),
    ] {
        let mut body = body;
        body["changeId"] = json!(format!("{key}-move"));
        body["occurredAt"] = json!(now);
        h.expect(
            200,
            "POST",
            &format!("/v1/sites/loja-x/leads/{key}/stage"),
            Some(body),
        )
        .await;
    }
    Days {
        ad,
        today,
        yesterday,
    }
}

async fn leads_land_on_the_day_they_arrived(h: &Harness, d: &Days) {
    let (s, r) = d.report(h, String::new()).await;
    assert_eq!(s, 200, "{r}");
    let days = r["days"].as_array().unwrap();
    assert_eq!(days.len(), 2);
    assert_eq!(
        (
            days[0]["leads"].clone(),
            days[0]["qualified"].clone(),
            days[0]["won"].clone(),
            days[0]["revenueCents"].clone()
        ),
        (json!(1), json!(1), json!(1), json!(1_000)),
        "{r}"
    );
    assert_eq!(
        (
            days[1]["leads"].clone(),
            days[1]["qualified"].clone(),
            days[1]["won"].clone(),
            days[1]["revenueCents"].clone()
        ),
        (json!(2), json!(2), json!(1), json!(45_990)),
        "{r}"
    );
    assert_eq!(days[0]["spendCents"], d.site_spend(h, d.yesterday).await);
    assert_eq!(days[1]["spendCents"], d.site_spend(h, d.today).await);
    assert_eq!(
        (r["spendCurrency"].clone(), r["currencyMismatch"].clone()),
        (json!("BRL"), json!(false))
    );
}

/// Organic leads bought nothing: no spend; paid leads: the costs and the
/// return the spend bought; the totals (organic included) carry none.
async fn origins_costs_and_the_return(h: &Harness, d: &Days) {
    let (_, r) = d.report(h, "&origin=organic".into()).await;
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(1), Value::Null),
        "{r}"
    );
    let (_, r) = d.report(h, "&origin=paid".into()).await;
    assert_eq!(
        (r["days"][1]["won"].clone(), r["days"][0]["leads"].clone()),
        (json!(1), json!(0)),
        "{r}"
    );
    // Paid leads: the costs and the return the spend bought; the totals
    // (organic included) carry none.
    let (_, r) = d.report(h, "&origin=paid".into()).await;
    let spend_today = d.site_spend(h, d.today).await;
    let paid = &r["days"][1];
    assert_eq!(
        paid["costPerLeadCents"], spend_today,
        "one paid lead today: {r}"
    );
    assert_eq!(paid["costPerSaleCents"], spend_today);
    let ros = 45_990.0 / spend_today as f64;
    assert!(
        (paid["returnOnSpend"].as_f64().unwrap() - ros).abs() < 1e-9,
        "{r}"
    );
    let (_, all) = d.report(h, String::new()).await;
    assert!(all["days"][1]["costPerLeadCents"].is_null(), "{all}");
}

/// One ad: its leads and its own spend.
async fn one_ads_leads_and_its_own_spend(h: &Harness, d: &Days) {
    let (_, r) = d.report(h, format!("&adId={}", d.ad)).await;
    let rows = h.all_rows("loja-x", LOJA_PRINCIPAL).await;
    let ad_today: i64 = rows
        .iter()
        .filter(|x| x.ad_id == d.ad && x.day_start == d.today)
        .map(|x| x.figures.spend_cents)
        .sum();
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(1), json!(ad_today)),
        "{r}"
    );
}

/// Both filters, or a range past 92 days: 400; two currencies never sum;
/// a removed lead leaves its cohort.
async fn bad_filters_currencies_and_a_removed_lead(h: &Harness, d: &Days) {
    // Both filters, or a range past 92 days: 400.
    let (s, e) = d.report(h, format!("&adId={}&origin=paid", d.ad)).await;
    assert_eq!((s, code(&e)), (400, "INVALID_ARGUMENT"));
    let (s, _) = h
        .call(
            "GET",
            &format!(
                "/v1/reports/daily?siteIds=loja-x&from={}&to={}",
                d.today - 92 * 86_400_000,
                d.today
            ),
            None,
        )
        .await;
    assert_eq!(s, 400);
    // Two currencies never sum.
    let (_, r) = h
        .call(
            "GET",
            &format!(
                "/v1/reports/daily?siteIds=loja-x,pet-mania&from={}&to={}",
                d.yesterday, d.today
            ),
            None,
        )
        .await;
    assert_eq!(
        (
            r["currencyMismatch"].clone(),
            r["days"][1]["spendCents"].clone()
        ),
        (json!(true), Value::Null),
        "{r}"
    );
    // A removed lead leaves its cohort.
    let (s, _) = h.call("DELETE", "/v1/sites/loja-x/leads/ana", None).await;
    assert_eq!(s, 200);
    let (_, r) = d.report(h, String::new()).await;
    assert_eq!(
        (
            r["days"][1]["leads"].clone(),
            r["days"][1]["won"].clone(),
            r["days"][1]["revenueCents"].clone()
        ),
        (json!(1), json!(0), json!(0)),
        "{r}"
    );
}
