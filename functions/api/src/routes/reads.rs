//! Reads: `GET /v1/meta/status` (where each site stands with Meta) and
//! `GET /v1/sites/{siteId}/spend` (spend per day and per ad).
//!
//! `null` means unknown, never zero, decided by account state: a site's
//! spend sums its synced accounts (those whose first backfill ended): `0`
//! when they spent nothing, `null` with no synced account. Spend never sums
//! across currencies: two billing currencies, or one other than the site's,
//! give `null` spend with `currencyMismatch: true`, each account's own
//! figures still shown.

use std::collections::{BTreeMap, BTreeSet};

use adtrail_domain::SiteId;
use adtrail_domain::dates::{Timezone, is_day_start};
use adtrail_domain::plan::backfill_progress;
use adtrail_domain::time::DAY_MS;
use adtrail_store::links::SiteAdAccount;
use adtrail_store::spend::SpendFigures;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{millis, query};
use crate::{Api, json};

/// Spend rows read per spend answer for the per-ad list.
pub const AD_ROW_BUDGET: usize = 12_000;
/// The longest range a spend read covers.
pub const MAX_SPEND_DAYS: i64 = 366;

/// An account as the status and spend reads show it.
pub(crate) fn account_view(link: &SiteAdAccount, totals: Option<Option<SpendFigures>>) -> Value {
    let backfill = Timezone::parse(&link.timezone).and_then(|tz| {
        backfill_progress(
            link.last_sync_at,
            link.backfill_from
                .as_deref()
                .and_then(adtrail_domain::dates::parse_date),
            link.created_at,
            tz,
        )
    });
    let mut v = json!({
        "adAccountId": link.ad_account_id,
        "name": link.name,
        "currency": link.currency,
        "timezone": link.timezone,
        "syncState": link.sync_state.as_str(),
        "lastSyncAt": link.last_sync_at,
        "lastError": link.last_error,
        "backfill": backfill.map(|(done, total)| json!({"done": done, "total": total})),
    });
    if let Some(totals) = totals {
        v["synced"] = json!(link.synced());
        v["spendCents"] = json!(totals.map(|t| t.spend_cents));
        v["impressions"] = json!(totals.map(|t| t.impressions));
        v["clicks"] = json!(totals.map(|t| t.clicks));
    }
    v
}

/// `siteIds`: 1 to 10 unique, comma-separated.
pub(crate) fn site_ids(text: Option<&String>) -> Result<Vec<SiteId>, ApiError> {
    let text = text.ok_or_else(|| {
        ApiError::invalid("siteIds: required (1 to 10 site ids, comma-separated)")
    })?;
    let mut seen = BTreeSet::new();
    let mut ids = vec![];
    for raw in text.split(',') {
        let id = SiteId::parse("siteIds", raw)?;
        if !seen.insert(id.clone()) {
            return Err(ApiError::invalid("siteIds: must be unique"));
        }
        ids.push(id);
    }
    if ids.len() > 10 {
        return Err(ApiError::invalid("siteIds: at most 10 sites"));
    }
    Ok(ids)
}

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
        Some(owner) => Some(crate::routes::connections::resolve_owner(
            caller, owner, false,
        )?),
        None if caller.is_host() => None,
        None => Some(caller.owner("me", false)?),
    };
    for id in &ids {
        caller.may_read(id.as_str())?;
    }
    let mut sites = vec![];
    for id in &ids {
        if api.aws.get_site(id.as_str()).await?.is_none() {
            return Err(ApiError::not_found(
                "siteIds: a requested site is not registered",
            ));
        }
        let links = api.aws.site_links(id.as_str()).await?;
        let pixel = api.aws.get_pixel(id.as_str()).await?;
        let mut pixel_json = crate::routes::pixels::pixel_view(pixel.as_ref());
        let mut accounts: Vec<Value> = links.iter().map(|l| account_view(l, None)).collect();
        if let Some(owner) = &asking {
            pixel_json["own"] = json!(
                pixel
                    .as_ref()
                    .is_some_and(|p| p.owner() == Some(owner.as_str()))
            );
            for (view, link) in accounts.iter_mut().zip(&links) {
                view["own"] = json!(&link.owner_key == owner);
            }
        }
        sites.push(json!({
            "siteId": id.as_str(),
            "linked": !links.is_empty(),
            "pixel": pixel_json,
            "conversions": crate::routes::conversions::status_block(api, id.as_str(), now).await?,
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
    let from = millis(&params, "from")?
        .ok_or_else(|| ApiError::invalid("from: required (a UTC day start in epoch ms)"))?;
    let to = millis(&params, "to")?
        .ok_or_else(|| ApiError::invalid("to: required (a UTC day start in epoch ms)"))?;
    if !is_day_start(from) {
        return Err(ApiError::invalid(
            "from: must be a UTC day start (a multiple of 86400000)",
        ));
    }
    if !is_day_start(to) {
        return Err(ApiError::invalid(
            "to: must be a UTC day start (a multiple of 86400000)",
        ));
    }
    if to < from {
        return Err(ApiError::invalid("to: must not be before from"));
    }
    if (to - from) / DAY_MS + 1 > MAX_SPEND_DAYS {
        return Err(ApiError::invalid("to: the range covers at most 366 days"));
    }
    caller.may_read(site.as_str())?;
    let Some(site_row) = api.aws.get_site(site.as_str()).await? else {
        return Err(ApiError::not_found("siteId: no such site"));
    };
    let links = api.aws.site_links(site.as_str()).await?;
    let synced: Vec<&SiteAdAccount> = links.iter().filter(|l| l.synced()).collect();
    let currencies: BTreeSet<&str> = synced.iter().map(|l| l.currency.as_str()).collect();
    let mismatch = currencies.len() > 1 || currencies.iter().any(|c| *c != site_row.currency);
    let spend_currency = (currencies.len() == 1)
        .then(|| currencies.iter().next().copied())
        .flatten();

    // Per day, from the site-day sums of the synced accounts.
    let mut days: BTreeMap<i64, SpendFigures> = (0..=(to - from) / DAY_MS)
        .map(|i| (from + i * DAY_MS, SpendFigures::default()))
        .collect();
    let mut per_account = BTreeMap::new();
    for link in &synced {
        let sums = api
            .aws
            .day_sums(site.as_str(), &link.ad_account_id, from, to)
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
    let known = !synced.is_empty();
    let money = |cents: i64| {
        if known && !mismatch {
            json!(cents)
        } else {
            Value::Null
        }
    };
    let count = |n: i64| if known { json!(n) } else { Value::Null };
    let mut totals = SpendFigures::default();
    let day_rows: Vec<Value> = days
        .iter()
        .map(|(day, f)| {
            totals.add(*f);
            json!({"dayStart": day, "spendCents": money(f.spend_cents), "impressions": count(f.impressions), "clicks": count(f.clicks)})
        })
        .collect();

    // Per ad, from the rows, on a read budget.
    let mut ads: BTreeMap<String, (String, SpendFigures)> = BTreeMap::new();
    let mut incomplete = false;
    let mut budget = AD_ROW_BUDGET;
    for link in &synced {
        let (rows, cut) = api
            .aws
            .spend_rows(site.as_str(), &link.ad_account_id, from, to, budget)
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
        api.aws.site_catalog(site.as_str()).await?
    };
    let mut ad_rows: Vec<Value> = ads
        .into_iter()
        .map(|(ad, (account, f))| {
            let c = catalog.get(&ad);
            let field = |pick: fn(&adtrail_store::catalog::CatalogEntry) -> &Option<String>| {
                c.and_then(|c| pick(c).clone())
            };
            json!({
                "adId": ad,
                "adAccountId": account,
                "adName": field(|c| &c.ad_name),
                "adsetId": field(|c| &c.adset_id),
                "adsetName": field(|c| &c.adset_name),
                "campaignId": field(|c| &c.campaign_id),
                "campaignName": field(|c| &c.campaign_name),
                "adStatus": field(|c| &c.ad_status),
                "creativeType": field(|c| &c.creative_type),
                "spendCents": if mismatch { Value::Null } else { json!(f.spend_cents) },
                "impressions": f.impressions,
                "clicks": f.clicks,
            })
        })
        .collect();
    ad_rows.sort_by_key(|v| {
        std::cmp::Reverse(
            v["spendCents"]
                .as_i64()
                .unwrap_or(v["impressions"].as_i64().unwrap_or(0)),
        )
    });

    json(
        200,
        &json!({
            "siteId": site.as_str(),
            "from": from,
            "to": to,
            "currency": site_row.currency,
            "spendCurrency": spend_currency,
            "currencyMismatch": mismatch,
            "totals": {"spendCents": money(totals.spend_cents), "impressions": count(totals.impressions), "clicks": count(totals.clicks)},
            "days": day_rows,
            "ads": ad_rows,
            "adsIncomplete": incomplete,
            "adAccounts": links.iter().map(|l| {
                let t = l.synced().then(|| per_account.get(&l.ad_account_id).copied().unwrap_or_default());
                account_view(l, Some(t))
            }).collect::<Vec<_>>(),
        }),
    )
}
