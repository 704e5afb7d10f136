//! Reads: `GET /v1/meta/status` (where each site stands with Meta) and
//! `GET /v1/sites/{siteId}/spend` (spend per day and per ad).
//!
//! `null` means unknown, never zero, decided by account state: a site's
//! spend sums its synced accounts (those whose first backfill ended): `0`
//! when they spent nothing, `null` with no synced account. Spend never sums
//! across currencies: two billing currencies, or one other than the site's,
//! give `null` spend with `currencyMismatch: true`, each account's own
//! figures still shown.

use std::collections::{BTreeMap, HashMap};

use adtrail_domain::SiteId;
use adtrail_domain::capi::EventName;
use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::spend::SpendFigures;
use adtrail_domain::spend::{SpendBasis, spend_basis};
use adtrail_domain::time::{DAY_MS, utc_day};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{day_range, millis, query, site_ids};
use crate::views::account_view;
use crate::{Api, json};

/// Spend rows read per spend answer for the per-ad list.
pub const AD_ROW_BUDGET: usize = 12_000;
/// Bytes the per-ad list may take in a spend answer: with the days and the
/// accounts, far below Lambda's 6 MB for an answer.
pub const AD_LIST_BYTES: usize = 4_000_000;
/// The longest range a spend read covers.
pub const MAX_SPEND_DAYS: i64 = 366;

pub(crate) async fn status(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let params = query(req, &["siteIds", "now", "ownerKey"])?;
    let ids = site_ids(params.get("siteIds"))?;
    let now = millis(&params, "now")?;
    // Asked with an owner (a dashboard always is), each link and the pixel
    // say whether that owner made them.
    let asking = match params.get("ownerKey") {
        Some(owner) => Some(crate::auth::resolve_owner(caller, owner, false)?),
        None if caller.is_host() => None,
        None => Some(caller.owner("me", false)?),
    };
    for id in &ids {
        caller.may_read(id.as_str())?;
    }
    let mut sites = vec![];
    for id in &ids {
        if api.store.sites().get_site(id.as_str()).await?.is_none() {
            return Err(ApiError::not_found(
                "siteIds: a requested site is not registered",
            ));
        }
        let links = api.store.links().site_links(id.as_str()).await?;
        let pixel = api.store.pixels().get_pixel(id.as_str()).await?;
        let mut pixel_json = crate::views::pixel_view(pixel.as_ref());
        let mut accounts: Vec<_> = links.iter().map(|l| account_view(l, None)).collect();
        if let Some(owner) = &asking {
            pixel_json.own = Some(
                pixel
                    .as_ref()
                    .is_some_and(|p| p.owner() == Some(owner.as_str())),
            );
            for (view, link) in accounts.iter_mut().zip(&links) {
                view.own = Some(&link.owner_key == owner);
            }
        }
        sites.push(json!({
            "siteId": id.as_str(),
            "linked": !links.is_empty(),
            "pixel": pixel_json,
            "conversions": status_block(api, id.as_str(), now).await?,
            "adAccounts": accounts,
        }));
    }
    json(200, &json!({ "sites": sites }))
}

pub(crate) async fn spend(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = query(req, &["from", "to"])?;
    let (from, to) = day_range(&params, MAX_SPEND_DAYS)?;
    caller.may_read(site.as_str())?;
    let Some(site_row) = api.store.sites().get_site(site.as_str()).await? else {
        return Err(ApiError::no_site());
    };
    let links = api.store.links().site_links(site.as_str()).await?;
    let synced: Vec<&SiteAdAccount> = links.iter().filter(|l| l.synced()).collect();
    let basis = spend_basis([(
        site_row.currency.as_str(),
        synced.iter().map(|l| l.currency.as_str()),
    )]);
    let (days, per_account) = spend_by_day(api, site.as_str(), &synced, from, to).await?;
    let (ads, incomplete) = spend_by_ad(api, site.as_str(), &synced, from, to, &basis).await?;
    let money = |cents: i64| json!(basis.money(cents));
    let count = |n: i64| json!(basis.count(n));
    let mut totals = SpendFigures::default();
    let day_rows: Vec<Value> = days
        .iter()
        .map(|(day, f)| {
            totals.add(*f);
            json!({"dayStart": day, "spendCents": money(f.spend_cents), "impressions": count(f.impressions), "clicks": count(f.clicks)})
        })
        .collect();
    json(
        200,
        &json!({
            "siteId": site.as_str(),
            "from": from,
            "to": to,
            "currency": site_row.currency,
            "spendCurrency": basis.spend_currency,
            "currencyMismatch": basis.currency_mismatch,
            "totals": {"spendCents": money(totals.spend_cents), "impressions": count(totals.impressions), "clicks": count(totals.clicks)},
            "days": day_rows,
            "ads": ads,
            "adsIncomplete": incomplete,
            "adAccounts": links.iter().map(|l| {
                let t = l.synced().then(|| per_account.get(&l.ad_account_id).copied().unwrap_or_default());
                account_view(l, Some(t))
            }).collect::<Vec<_>>(),
        }),
    )
}

/// Each day's spend (every day of the range, `0` when nothing was spent),
/// from the site-day sums of the synced accounts; and each account's total.
async fn spend_by_day(
    api: &Api,
    site: &str,
    synced: &[&SiteAdAccount],
    from: i64,
    to: i64,
) -> Result<(BTreeMap<i64, SpendFigures>, BTreeMap<String, SpendFigures>), ApiError> {
    let mut days: BTreeMap<i64, SpendFigures> = (0..=(to - from) / DAY_MS)
        .map(|i| (from + i * DAY_MS, SpendFigures::default()))
        .collect();
    let mut per_account = BTreeMap::new();
    for link in synced {
        let sums = api
            .store
            .spend()
            .day_sums(site, &link.ad_account_id, from, to)
            .await?;
        let mut total = SpendFigures::default();
        for (day, figures) in sums {
            total.add(figures);
            if let Some(d) = days.get_mut(&day) {
                d.add(figures);
            }
        }
        per_account.insert(link.ad_account_id.clone(), total);
    }
    Ok((days, per_account))
}

/// One ad's spend over the range, with what the catalog says of it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdSpend {
    ad_id: String,
    ad_account_id: String,
    ad_name: Option<String>,
    adset_id: Option<String>,
    adset_name: Option<String>,
    campaign_id: Option<String>,
    campaign_name: Option<String>,
    ad_status: Option<String>,
    creative_type: Option<String>,
    spend_cents: Option<i64>,
    impressions: i64,
    clicks: i64,
}

/// Each ad's spend, from the rows on a read budget (answers whether it cut
/// them short), most spend first (impressions when spend is unknown).
async fn spend_by_ad(
    api: &Api,
    site: &str,
    synced: &[&SiteAdAccount],
    from: i64,
    to: i64,
    basis: &SpendBasis,
) -> Result<(Vec<AdSpend>, bool), ApiError> {
    let mut ads: BTreeMap<String, (String, SpendFigures)> = BTreeMap::new();
    let mut incomplete = false;
    let mut budget = AD_ROW_BUDGET;
    for link in synced {
        let (rows, cut) = api
            .store
            .spend()
            .spend_rows(site, &link.ad_account_id, from, to, budget)
            .await?;
        incomplete |= cut;
        budget = budget.saturating_sub(rows.len());
        for row in rows {
            ads.entry(row.ad_id)
                .or_insert_with(|| (link.ad_account_id.clone(), SpendFigures::default()))
                .1
                .add(row.figures);
        }
    }
    let catalog = if ads.is_empty() {
        Default::default()
    } else {
        api.store.catalog().site_catalog(site).await?
    };
    let mut rows: Vec<AdSpend> = ads
        .into_iter()
        .map(|(ad, (account, f))| {
            let c = catalog.get(&ad);
            let field =
                |pick: fn(&CatalogEntry) -> &Option<String>| c.and_then(|c| pick(c).clone());
            AdSpend {
                ad_name: field(|c| &c.ad_name),
                adset_id: field(|c| &c.adset_id),
                adset_name: field(|c| &c.adset_name),
                campaign_id: field(|c| &c.campaign_id),
                campaign_name: field(|c| &c.campaign_name),
                ad_status: field(|c| &c.ad_status),
                creative_type: field(|c| &c.creative_type),
                ad_id: ad,
                ad_account_id: account,
                spend_cents: (!basis.currency_mismatch).then_some(f.spend_cents),
                impressions: f.impressions,
                clicks: f.clicks,
            }
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.spend_cents.unwrap_or(r.impressions)));
    // The ads that spent least go first when the list would not fit.
    incomplete |= crate::views::keep_within(&mut rows, AD_LIST_BYTES);
    Ok((rows, incomplete))
}

/// The `conversions` block of `meta.status`: counts by status, and with
/// `now` the events Meta accepted in the 30 UTC days up to it (by event)
/// and today.
async fn status_block(api: &Api, site: &str, now: Option<i64>) -> Result<Value, ApiError> {
    let today = now.map(utc_day);
    let from = today.map(|t| t - 29 * DAY_MS);
    let counts = api
        .store
        .conversions()
        .conversion_counts(site, from)
        .await?;
    let (last30d, sent_today) = match today {
        None => (Value::Null, Value::Null),
        Some(today) => {
            let mut by_event: HashMap<EventName, i64> = HashMap::new();
            let mut sent_today = 0;
            for (day, events) in &counts.days {
                if from.is_some_and(|f| *day < f) || *day > today {
                    continue;
                }
                for (e, n) in events {
                    *by_event.entry(*e).or_default() += n;
                    if *day == today {
                        sent_today += n;
                    }
                }
            }
            let get = |e: EventName| by_event.get(&e).copied().unwrap_or(0);
            (
                // Every event, with its zero: a client reads a fixed shape.
                Value::Object(
                    EventName::ALL
                        .into_iter()
                        .map(|e| (e.as_str().to_owned(), json!(get(e))))
                        .collect(),
                ),
                json!(sent_today),
            )
        }
    };
    // Each destination's own totals, the pixel's as `meta`.
    let destinations: serde_json::Map<String, Value> = counts
        .destinations
        .iter()
        .map(|(slug, t)| {
            (
                slug.clone(),
                json!({"pending": t.pending, "sent": t.sent, "failed": t.failed}),
            )
        })
        .collect();
    Ok(json!({
        "pending": counts.pending,
        "sent": counts.sent,
        "failed": counts.failed,
        "last30d": last30d,
        "sentToday": sent_today,
        "destinations": destinations,
    }))
}
