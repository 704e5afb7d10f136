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

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{day_range, millis, query, site_ids};
use crate::views::{
    AdSpend, ConversionsBlock, FlowTotals, SiteStatusView, SpendDay, SpendTriple, SpendView,
    StatusView, account_view,
};
use crate::{Api, json};

/// Spend rows read per spend answer for the per-ad list.
pub const AD_ROW_BUDGET: usize = 12_000;
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
    let mut read = vec![];
    for id in &ids {
        if api.store.sites().get_site(id.as_str()).await?.is_none() {
            return Err(ApiError::not_found(
                "siteIds: a requested site is not registered",
            ));
        }
        let links = api.store.links().site_links(id.as_str()).await?;
        let pixel = api.store.pixels().get_pixel(id.as_str()).await?;
        let block = status_block(api, id.as_str(), now).await?;
        read.push((id, links, pixel, block));
    }
    let sites = read
        .iter()
        .map(|(id, links, pixel, block)| {
            let mut pixel_view = crate::views::pixel_view(pixel.as_ref());
            let mut accounts: Vec<_> = links.iter().map(|l| account_view(l, None)).collect();
            if let Some(owner) = &asking {
                pixel_view.own = Some(
                    pixel
                        .as_ref()
                        .is_some_and(|p| p.owner() == Some(owner.as_str())),
                );
                for (view, link) in accounts.iter_mut().zip(links) {
                    view.own = Some(&link.owner_key == owner);
                }
            }
            SiteStatusView {
                site_id: id.as_str(),
                linked: !links.is_empty(),
                pixel: pixel_view,
                conversions: block,
                ad_accounts: accounts,
            }
        })
        .collect();
    json(200, &StatusView { sites })
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
    let mut totals = SpendFigures::default();
    let day_rows: Vec<SpendDay> = days
        .iter()
        .map(|(day, f)| {
            totals.add(*f);
            SpendDay {
                day_start: *day,
                figures: SpendTriple::of(&basis, *f),
            }
        })
        .collect();
    let accounts = links
        .iter()
        .map(|l| {
            let t = l.synced().then(|| {
                per_account
                    .get(&l.ad_account_id)
                    .copied()
                    .unwrap_or_default()
            });
            account_view(l, Some(t))
        })
        .collect();
    json(
        200,
        &SpendView {
            site_id: site.as_str(),
            from,
            to,
            currency: &site_row.currency,
            spend_currency: basis.spend_currency.as_deref(),
            currency_mismatch: basis.currency_mismatch,
            totals: SpendTriple::of(&basis, totals),
            days: day_rows,
            ads,
            ads_incomplete: incomplete,
            ad_accounts: accounts,
        },
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
    let accounts: Vec<&str> = synced.iter().map(|l| l.ad_account_id.as_str()).collect();
    let (sums, _) = api
        .store
        .spend()
        .site_day_sums(site, &accounts, from, to, usize::MAX)
        .await?;
    let mut per_account: BTreeMap<String, SpendFigures> = accounts
        .iter()
        .map(|a| ((*a).to_owned(), SpendFigures::default()))
        .collect();
    for (account, sums) in sums {
        let total = per_account.entry(account).or_default();
        for (day, figures) in sums {
            total.add(figures);
            if let Some(d) = days.get_mut(&day) {
                d.add(figures);
            }
        }
    }
    Ok((days, per_account))
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
    incomplete |= crate::views::keep_within(&mut rows, crate::views::LIST_BYTES);
    Ok((rows, incomplete))
}

/// The `conversions` block of `meta.status`: counts by status, and with
/// `now` the events Meta accepted in the 30 UTC days up to it (by event)
/// and today.
async fn status_block(
    api: &Api,
    site: &str,
    now: Option<i64>,
) -> Result<ConversionsBlock, ApiError> {
    let today = now.map(utc_day);
    let from = today.map(|t| t - 29 * DAY_MS);
    let counts = api
        .store
        .conversions()
        .conversion_counts(site, from)
        .await?;
    let (last30d, sent_today) = match today {
        None => (None, None),
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
            (Some(ConversionsBlock::every_event(get)), Some(sent_today))
        }
    };
    // Each destination's own totals, the pixel's as `meta`.
    let destinations = counts
        .destinations
        .iter()
        .map(|(slug, t)| {
            (
                slug.clone(),
                FlowTotals {
                    pending: t.pending,
                    sent: t.sent,
                    failed: t.failed,
                },
            )
        })
        .collect();
    Ok(ConversionsBlock {
        pending: counts.pending,
        sent: counts.sent,
        failed: counts.failed,
        last30d,
        sent_today,
        destinations,
    })
}
