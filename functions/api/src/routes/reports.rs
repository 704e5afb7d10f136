//! `GET /v1/reports/daily?siteIds=&from=&to=&adId=|origin=`: every UTC day
//! of the range with its leads, qualified, won and revenue, counted by
//! cohort (a qualification or sale lands on the day the lead first
//! arrived), next to the day's spend for the same scope.
//!
//! Derived metrics (costs per lead, qualified lead and sale, return on
//! spend and its band) are computed by the domain, and only where the spend
//! bought the leads: an ad, or paid origins; `null` elsewhere and under a
//! currency mismatch.
//!
//! Spend follows the null-versus-zero rules of the spend read: it sums the
//! synced accounts of the sites (`null` without one), never across
//! currencies (`currencyMismatch`). An organic origin bought nothing: its
//! spend is `null`. With `adId`, the spend is that ad's.
//!
//! Reads are bounded: past 12,000 lead rollup rows a report fails
//! (`REPORT_INCOMPLETE`) rather than count short; past its spend budgets
//! (12,000 site-day or per-ad rows) the spend is `null` with
//! `spendIncomplete`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use adtrail_domain::SiteId;
use adtrail_domain::dates::is_day_start;
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::leads::{check_origin, is_paid};
use adtrail_domain::metrics::{Counters, ReturnBand, derive, return_band};
use adtrail_domain::time::DAY_MS;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{millis, query};
use crate::routes::reads::site_ids;
use crate::{Api, ReportLimits, json};

/// The longest range of the daily report.
pub const MAX_DAILY_DAYS: i64 = 92;

/// `from` and `to`: UTC day starts in epoch ms, inclusive, covering at most
/// `max_days` days.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the parameter.
pub(crate) fn day_range(
    params: &HashMap<String, String>,
    max_days: i64,
) -> Result<(i64, i64), ApiError> {
    let from = millis(params, "from")?
        .ok_or_else(|| ApiError::invalid("from: required (a UTC day start in epoch ms)"))?;
    let to = millis(params, "to")?
        .ok_or_else(|| ApiError::invalid("to: required (a UTC day start in epoch ms)"))?;
    for (name, v) in [("from", from), ("to", to)] {
        if !is_day_start(v) {
            return Err(ApiError::invalid(format!(
                "{name}: must be a UTC day start (a multiple of 86400000)"
            )));
        }
    }
    if to < from {
        return Err(ApiError::invalid("to: must not be before from"));
    }
    if (to - from) / DAY_MS + 1 > max_days {
        return Err(ApiError::invalid(format!(
            "to: the range covers at most {max_days} days"
        )));
    }
    Ok((from, to))
}

/// The answer when a report's lead rollups run past their budget.
pub(crate) fn report_incomplete() -> ApiError {
    ApiError::new(
        ErrorCode::ReportIncomplete,
        "the report's leads run past 12000 rollup rows: ask for fewer sites or days",
    )
}

/// Which leads and which spend a report covers.
enum Scope {
    All,
    /// Every paid origin together (`origin=paid`).
    Paid,
    Origin(String),
    Ad(String),
}

impl Scope {
    fn counts(&self, dim: &str) -> bool {
        match self {
            // Every lead has one origin: the origins sum to all leads.
            Scope::All => dim.starts_with("o#"),
            Scope::Paid => dim.strip_prefix("o#").is_some_and(is_paid),
            Scope::Origin(o) => dim.strip_prefix("o#") == Some(o.as_str()),
            Scope::Ad(ad) => dim.strip_prefix("a#") == Some(ad.as_str()),
        }
    }
    /// Whether the spend bought these leads (so costs and returns mean
    /// something): an ad, or paid origins. Totals include organic leads,
    /// which would flatter the ads.
    fn bought(&self) -> bool {
        match self {
            Scope::All => false,
            Scope::Paid | Scope::Ad(_) => true,
            Scope::Origin(o) => is_paid(o),
        }
    }
    fn has_spend(&self) -> bool {
        match self {
            Scope::Origin(o) => is_paid(o),
            _ => true,
        }
    }
}

pub(crate) async fn daily(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let params = query(req, &["siteIds", "from", "to", "adId", "origin"])?;
    let ids = site_ids(params.get("siteIds"))?;
    let (from, to) = day_range(&params, MAX_DAILY_DAYS)?;
    let scope = match (params.get("adId"), params.get("origin")) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid("adId: give adId or origin, not both"));
        }
        (Some(ad), None) => {
            check_meta_numeric("adId", ad)?;
            Scope::Ad(ad.clone())
        }
        (None, Some(o)) if o == "paid" => Scope::Paid,
        (None, Some(o)) => {
            check_origin(o)?;
            Scope::Origin(o.clone())
        }
        (None, None) => Scope::All,
    };
    for id in &ids {
        caller.may_read(id.as_str())?;
    }

    let mut leads: BTreeMap<i64, Counters> = (0..=(to - from) / DAY_MS)
        .map(|i| (from + i * DAY_MS, Counters::default()))
        .collect();
    let mut spend: BTreeMap<i64, i64> = leads.keys().map(|d| (*d, 0)).collect();
    let mut currencies = BTreeSet::new();
    let mut site_currencies = BTreeSet::new();
    let mut synced_any = false;
    let mut incomplete = false;
    let mut budget = api.limits;
    for id in &ids {
        let Some(site) = api.aws.get_site(id.as_str()).await? else {
            return Err(ApiError::not_found(
                "siteIds: a requested site is not registered",
            ));
        };
        site_currencies.insert(site.currency.clone());
        let (rows, cut) = api
            .aws
            .rollup_rows(id.as_str(), from, to, budget.rollup_rows)
            .await?;
        if cut {
            return Err(report_incomplete());
        }
        budget.rollup_rows -= rows.len();
        for row in rows.iter().filter(|r| scope.counts(&r.dim)) {
            let (day, c) = (row.day_start, &row.counters);
            if let Some(d) = leads.get_mut(&day) {
                d.add(c);
            }
        }
        if !scope.has_spend() {
            continue;
        }
        incomplete |= add_spend(
            api,
            id,
            &scope,
            from,
            to,
            &mut spend,
            &mut currencies,
            &mut synced_any,
            &mut budget,
        )
        .await?;
    }
    // One currency or none: every synced account's, and every site's.
    let mismatch = currencies.len() > 1
        || (!currencies.is_empty() && site_currencies.iter().any(|c| !currencies.contains(c)));
    let spend_known = scope.has_spend() && synced_any && !mismatch && !incomplete;
    let days: Vec<Value> = leads
        .iter()
        .map(|(day, c)| {
            let day_spend = spend_known.then(|| spend.get(day).copied().unwrap_or(0));
            let derived = derive(day_spend.filter(|_| scope.bought()), c);
            json!({
                "dayStart": day,
                "leads": c.leads,
                "qualified": c.qualified,
                "won": c.won,
                "revenueCents": c.revenue_cents,
                "spendCents": day_spend,
                "costPerLeadCents": derived.cost_per_lead_cents,
                "costPerQualifiedCents": derived.cost_per_qualified_cents,
                "costPerSaleCents": derived.cost_per_sale_cents,
                "returnOnSpend": derived.return_on_spend,
                "returnBand": return_band(derived.return_on_spend).map(ReturnBand::as_str),
            })
        })
        .collect();
    json(
        200,
        &json!({
            "siteIds": ids.iter().map(SiteId::as_str).collect::<Vec<_>>(),
            "from": from,
            "to": to,
            "spendCurrency": (currencies.len() == 1).then(|| currencies.iter().next().cloned()).flatten(),
            "currencyMismatch": mismatch,
            "spendIncomplete": incomplete,
            "days": days,
        }),
    )
}

/// Adds a site's spend for the scope, from its synced accounts. Answers
/// whether the ad's rows ran past their budget.
#[allow(clippy::too_many_arguments)]
async fn add_spend(
    api: &Api,
    site: &SiteId,
    scope: &Scope,
    from: i64,
    to: i64,
    spend: &mut BTreeMap<i64, i64>,
    currencies: &mut BTreeSet<String>,
    synced_any: &mut bool,
    budget: &mut ReportLimits,
) -> Result<bool, ApiError> {
    let mut incomplete = false;
    for link in api
        .aws
        .site_links(site.as_str())
        .await?
        .iter()
        .filter(|l| l.synced())
    {
        *synced_any = true;
        currencies.insert(link.currency.clone());
        match scope {
            Scope::Ad(ad) => {
                let (rows, cut) = api
                    .aws
                    .spend_rows(site.as_str(), &link.ad_account_id, from, to, budget.ad_rows)
                    .await?;
                budget.ad_rows -= rows.len();
                incomplete |= cut;
                for row in rows.iter().filter(|r| &r.ad_id == ad) {
                    *spend.entry(row.day_start).or_default() += row.figures.spend_cents;
                }
            }
            _ => {
                let (sums, cut) = api
                    .aws
                    .day_sums_capped(
                        site.as_str(),
                        &link.ad_account_id,
                        from,
                        to,
                        budget.day_rows,
                    )
                    .await?;
                budget.day_rows -= sums.len();
                incomplete |= cut;
                for (day, f) in sums {
                    *spend.entry(day).or_default() += f.spend_cents;
                }
            }
        }
    }
    Ok(incomplete)
}
