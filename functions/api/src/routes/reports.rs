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

use std::collections::{BTreeMap, BTreeSet};

use adtrail_domain::SiteId;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::leads::{check_origin, is_paid};
use adtrail_domain::metrics::{Counters, ReturnBand, derive, return_band};
use adtrail_domain::spend::spend_basis;
use adtrail_domain::time::DAY_MS;
use adtrail_store::keys::RollupDim;
use lambda_http::{Body, Request, Response};

use crate::auth::Caller;
use crate::cohorts::site_rollups;
use crate::error::ApiError;
use crate::input::site_ids;
use crate::input::{day_range, query};
use crate::views::{DailyView, DayRow};
use crate::{Api, ReportLimits, json};

/// The longest range of the daily report.
pub const MAX_DAILY_DAYS: i64 = 92;

/// Which leads and which spend a report covers.
enum Scope {
    All,
    /// Every paid origin together (`origin=paid`).
    Paid,
    Origin(String),
    Ad(String),
}

impl Scope {
    /// `adId` or `origin` (`paid` for every paid origin), not both.
    fn parse(ad: Option<&String>, origin: Option<&String>) -> Result<Self, ApiError> {
        Ok(match (ad, origin) {
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
        })
    }

    fn counts(&self, dim: &RollupDim) -> bool {
        match (self, dim) {
            // Every lead has one origin: the origins sum to all leads.
            (Scope::All, RollupDim::Origin(_)) => true,
            (Scope::Paid, RollupDim::Origin(o)) => is_paid(o),
            (Scope::Origin(want), RollupDim::Origin(o)) => want == o,
            (Scope::Ad(want), RollupDim::Ad(ad)) => want == ad,
            _ => false,
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
    let scope = Scope::parse(params.get("adId"), params.get("origin"))?;
    caller.may_read_all(&ids)?;

    let mut leads: BTreeMap<i64, Counters> = (0..=(to - from) / DAY_MS)
        .map(|i| (from + i * DAY_MS, Counters::default()))
        .collect();
    let mut spend: BTreeMap<i64, i64> = leads.keys().map(|d| (*d, 0)).collect();
    // Each site's currency with its synced accounts' currencies.
    let mut currencies: Vec<(String, BTreeSet<String>)> = vec![];
    let mut incomplete = false;
    let mut budget = api.limits;
    for id in &ids {
        let (site, rows) = site_rollups(api, id, from, to, &mut budget.rollup_rows).await?;
        for row in rows.iter().filter(|r| scope.counts(&r.dim)) {
            let (day, c) = (row.day_start, &row.counters);
            if let Some(d) = leads.get_mut(&day) {
                d.add(c);
            }
        }
        if !scope.has_spend() {
            continue;
        }
        let (cut, accounts) = add_spend(api, id, &scope, from, to, &mut spend, &mut budget).await?;
        incomplete |= cut;
        currencies.push((site.currency.clone(), accounts));
    }
    // One currency or none: the domain's one rule for spend.
    let basis = spend_basis(
        currencies
            .iter()
            .map(|(site, accounts)| (site.as_str(), accounts.iter().map(String::as_str))),
    );
    let mismatch = basis.currency_mismatch;
    let spend_known = scope.has_spend() && basis.known && !mismatch && !incomplete;
    let days: Vec<DayRow> = leads
        .iter()
        .map(|(day, c)| {
            let day_spend = spend_known.then(|| spend.get(day).copied().unwrap_or(0));
            day_row(*day, c, day_spend, scope.bought())
        })
        .collect();
    json(
        200,
        &DailyView {
            site_ids: ids.iter().map(SiteId::as_str).collect(),
            from,
            to,
            spend_currency: basis.spend_currency.as_deref(),
            currency_mismatch: mismatch,
            spend_incomplete: incomplete,
            days,
        },
    )
}

/// A day's row: its cohort's counters next to the spend, and where the
/// spend bought the leads, the derived metrics.
fn day_row(day: i64, c: &Counters, spend: Option<i64>, bought: bool) -> DayRow {
    let derived = derive(spend.filter(|_| bought), c);
    DayRow {
        day_start: day,
        leads: c.leads,
        qualified: c.qualified,
        won: c.won,
        revenue_cents: c.revenue_cents,
        spend_cents: spend,
        cost_per_lead_cents: derived.cost_per_lead_cents,
        cost_per_qualified_cents: derived.cost_per_qualified_cents,
        cost_per_sale_cents: derived.cost_per_sale_cents,
        return_on_spend: derived.return_on_spend,
        return_band: return_band(derived.return_on_spend).map(ReturnBand::as_str),
    }
}

/// Adds a site's spend for the scope, from its synced accounts. Answers
/// whether the rows or day sums ran past their budget, and the accounts'
/// currencies.
async fn add_spend(
    api: &Api,
    site: &SiteId,
    scope: &Scope,
    from: i64,
    to: i64,
    spend: &mut BTreeMap<i64, i64>,
    budget: &mut ReportLimits,
) -> Result<(bool, BTreeSet<String>), ApiError> {
    let links: Vec<_> = api
        .store
        .links()
        .site_links(site.as_str())
        .await?
        .into_iter()
        .filter(|l| l.synced())
        .collect();
    let currencies = links.iter().map(|l| l.currency.clone()).collect();
    if let Scope::Ad(ad) = scope {
        let mut incomplete = false;
        for link in &links {
            let (rows, cut) = api
                .store
                .spend()
                .spend_rows(site.as_str(), &link.ad_account_id, from, to, budget.ad_rows)
                .await?;
            budget.ad_rows -= rows.len();
            incomplete |= cut;
            for row in rows.iter().filter(|r| &r.ad_id == ad) {
                *spend.entry(row.day_start).or_default() += row.figures.spend_cents;
            }
        }
        return Ok((incomplete, currencies));
    }
    let accounts: Vec<&str> = links.iter().map(|l| l.ad_account_id.as_str()).collect();
    let (sums, cut) = api
        .store
        .spend()
        .site_day_sums(site.as_str(), &accounts, from, to, budget.day_rows)
        .await?;
    for (day, f) in sums.values().flatten() {
        budget.day_rows -= 1;
        *spend.entry(*day).or_default() += f.spend_cents;
    }
    Ok((cut, currencies))
}
