//! `GET /v1/reports/leads?siteIds=&from=&to=`: the sites' leads, qualified
//! leads, sales and revenue by origin and by campaign → ad set → ad, each
//! next to what the ads spent, with `bySite` rows in request order.
//!
//! Counting is by cohort (a sale lands on the day its lead arrived), read
//! from the rollups the lead transactions keep; past 12,000 rollup rows the
//! report fails (`REPORT_INCOMPLETE`) rather than answer short counts.
//!
//! Spend never makes a report fail: it reads on budgets of its own (12,000
//! per-ad rows for the campaign tree, 12,000 site-day rows for the rest), and
//! past one it turns `null` with `spendIncomplete`. Null means unknown, never
//! zero, decided by account state: an ad a synced account covers and that
//! spent nothing is `0`; one no synced account covers is `null`. Spend never
//! sums across currencies: the totals, origins and tree carry `null` spend
//! with `currencyMismatch`, and each site's own spend stays in its row.
//!
//! Costs and returns come from the domain, only on rows the spend bought:
//! ads, ad sets, campaigns, a paid origin, a site's `paid`.

mod rows;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use adtrail_domain::SiteId;
use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::leads::is_paid;
use adtrail_domain::metrics::Counters;
use adtrail_domain::spend::SpendFigures;
use adtrail_domain::spend::{SpendBasis, spend_basis};
use adtrail_store::keys::RollupDim;
use adtrail_store::rollups::RollupRow;
use lambda_http::{Body, Request, Response};

use self::rows::{
    AdRow, AdView, Counts, Figures, LeadsReport, OriginRow, Paid, SiteRow, TreeCut,
    keep_tree_within, tree,
};
use crate::auth::Caller;
use crate::cohorts::site_rollups;
use crate::error::ApiError;
use crate::input::report_params;
use crate::{Api, json};

/// The longest range of the leads report.
pub const MAX_REPORT_DAYS: i64 = 366;
/// How long a thumbnail URL works.
pub const THUMBNAIL_URL_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// What one site brings to the report.
struct SiteRead {
    id: SiteId,
    currency: String,
    /// Counters of every lead, and of the paid origins' leads.
    all: Counters,
    paid: Counters,
    origins: BTreeMap<String, Counters>,
    /// Counters by ad, from the paid leads' rollups.
    ads: BTreeMap<String, Counters>,
    /// The synced accounts' currencies and ids.
    currencies: BTreeSet<String>,
    synced: BTreeSet<String>,
    /// The site's spend from its day sums (`None` without a synced account).
    spend: Option<SpendFigures>,
    /// Each ad's spend from its rows.
    ad_spend: BTreeMap<String, SpendFigures>,
    catalog: HashMap<String, CatalogEntry>,
}

impl SiteRead {
    /// The domain's spend rule over this site alone.
    fn basis(&self) -> SpendBasis {
        spend_basis([(
            self.currency.as_str(),
            self.currencies.iter().map(String::as_str),
        )])
    }

    /// Its accounts bill in two currencies, or in one other than the site's.
    fn mismatch(&self) -> bool {
        self.basis().currency_mismatch
    }

    /// Counts one rollup row: under its origin (all leads, and the paid
    /// ones) or its ad; a form's rows are the forms report's.
    fn count(&mut self, row: &RollupRow) {
        match &row.dim {
            RollupDim::Origin(origin) => {
                self.all.add(&row.counters);
                if is_paid(origin) {
                    self.paid.add(&row.counters);
                }
                self.origins
                    .entry(origin.clone())
                    .or_default()
                    .add(&row.counters);
            }
            RollupDim::Ad(ad) => self.ads.entry(ad.clone()).or_default().add(&row.counters),
            RollupDim::Form(_) => {}
        }
    }

    /// Its row in `bySite`.
    fn row(&self, days_cut: bool) -> SiteRow {
        let own_mismatch = self.mismatch();
        let paid = match self.spend {
            Some(f) if !days_cut => Paid::known(f, !own_mismatch),
            _ => Paid::default(),
        };
        SiteRow {
            site_id: self.id.as_str().to_owned(),
            currency: self.currency.clone(),
            spend_currency: self.basis().spend_currency,
            currency_mismatch: own_mismatch,
            counts: Counts::of(&self.all, paid),
            paid: Figures::of(&self.paid, paid, true),
        }
    }
}

/// The budgets one report spends its reads from.
struct Budgets {
    rollups: usize,
    days: usize,
    ad_rows: usize,
    days_cut: bool,
    ad_rows_cut: bool,
}

pub(crate) async fn leads(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let (ids, from, to) = report_params(req, MAX_REPORT_DAYS)?;
    caller.may_read_all(&ids)?;
    let mut budgets = Budgets {
        rollups: api.limits.rollup_rows,
        days: api.limits.day_rows,
        ad_rows: api.limits.ad_rows,
        days_cut: false,
        ad_rows_cut: false,
    };
    let mut sites = vec![];
    for id in ids {
        sites.push(read_site(api, id, from, to, &mut budgets).await?);
    }
    let report = assemble(api, &sites, &budgets, from, to).await?;
    json(200, &report)
}

async fn read_site(
    api: &Api,
    id: SiteId,
    from: i64,
    to: i64,
    budgets: &mut Budgets,
) -> Result<SiteRead, ApiError> {
    let (site, rows) = site_rollups(api, &id, from, to, &mut budgets.rollups).await?;
    let mut read = SiteRead {
        id,
        currency: site.currency,
        all: Counters::default(),
        paid: Counters::default(),
        origins: BTreeMap::new(),
        ads: BTreeMap::new(),
        currencies: BTreeSet::new(),
        synced: BTreeSet::new(),
        spend: None,
        ad_spend: BTreeMap::new(),
        catalog: HashMap::new(),
    };
    for row in &rows {
        read.count(row);
    }
    read_spend(api, &mut read, from, to, budgets).await?;
    let site_id = read.id.as_str().to_owned();
    let ads: Vec<String> = read
        .ads
        .keys()
        .chain(read.ad_spend.keys())
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    read.catalog = api
        .store
        .catalog()
        .catalog_entries(&site_id, &ads)
        .await?
        .into_iter()
        .map(|e| (e.ad_id.clone(), e))
        .collect();
    Ok(read)
}

/// A site's spend from its synced accounts: the day sums (for the totals)
/// and the per-ad rows (for the tree), each on its budget.
async fn read_spend(
    api: &Api,
    read: &mut SiteRead,
    from: i64,
    to: i64,
    budgets: &mut Budgets,
) -> Result<(), ApiError> {
    let site_id = read.id.as_str().to_owned();
    let links: Vec<_> = api
        .store
        .links()
        .site_links(&site_id)
        .await?
        .into_iter()
        .filter(|l| l.synced())
        .collect();
    if links.is_empty() {
        return Ok(());
    }
    let accounts: Vec<&str> = links.iter().map(|l| l.ad_account_id.as_str()).collect();
    let (sums, cut) = api
        .store
        .spend()
        .site_day_sums(&site_id, &accounts, from, to, budgets.days)
        .await?;
    budgets.days_cut |= cut;
    let spend = read.spend.get_or_insert_with(SpendFigures::default);
    for f in sums.values().flat_map(BTreeMap::values) {
        budgets.days -= 1;
        spend.add(*f);
    }
    for link in links {
        read.currencies.insert(link.currency.clone());
        read.synced.insert(link.ad_account_id.clone());
        if budgets.ad_rows_cut {
            continue;
        }
        let (rows, cut) = api
            .store
            .spend()
            .spend_rows(&site_id, &link.ad_account_id, from, to, budgets.ad_rows)
            .await?;
        budgets.ad_rows -= rows.len();
        budgets.ad_rows_cut |= cut;
        for row in rows {
            read.ad_spend.entry(row.ad_id).or_default().add(row.figures);
        }
    }
    Ok(())
}

async fn assemble(
    api: &Api,
    sites: &[SiteRead],
    budgets: &Budgets,
    from: i64,
    to: i64,
) -> Result<LeadsReport, ApiError> {
    let basis = spend_basis(
        sites
            .iter()
            .map(|s| (s.currency.as_str(), s.currencies.iter().map(String::as_str))),
    );
    let mismatch = basis.currency_mismatch;
    let synced_any = sites.iter().any(|s| s.spend.is_some());
    // The totals' spend: every synced account of every site, in one currency.
    let total_paid = if synced_any && !budgets.days_cut {
        let all = sites
            .iter()
            .filter_map(|s| s.spend)
            .fold(SpendFigures::default(), |mut a, f| {
                a.add(f);
                a
            });
        Paid::known(all, !mismatch)
    } else {
        Paid::default()
    };
    let mut totals = Counters::default();
    for s in sites {
        totals.add(&s.all);
    }
    let origins = origin_rows(sites, total_paid);

    let mut ads = vec![];
    for s in sites {
        for ad in s
            .ads
            .keys()
            .chain(s.ad_spend.keys())
            .collect::<BTreeSet<_>>()
        {
            ads.push(ad_row(api, s, ad, mismatch, budgets).await?);
        }
    }
    let mut campaigns = tree(ads);
    let TreeCut {
        ads: ads_truncated,
        groups: groups_truncated,
    } = keep_tree_within(&mut campaigns, crate::views::LIST_BYTES);

    let by_site: Vec<SiteRow> = sites.iter().map(|s| s.row(budgets.days_cut)).collect();

    let site_currencies: BTreeSet<&String> = sites.iter().map(|s| &s.currency).collect();
    let spend_currency = basis
        .spend_currency
        .filter(|_| !mismatch && total_paid.spend_cents.is_some());
    Ok(LeadsReport {
        site_ids: sites.iter().map(|s| s.id.as_str().to_owned()).collect(),
        from,
        to,
        currency: (site_currencies.len() == 1)
            .then(|| site_currencies.first().map(|c| (*c).clone()))
            .flatten(),
        spend_currency,
        currency_mismatch: mismatch,
        spend_incomplete: budgets.days_cut || budgets.ad_rows_cut,
        ads_truncated,
        groups_truncated,
        totals: Counts::of(&totals, total_paid),
        origins,
        campaigns,
        by_site,
    })
}

/// The origins' rows. Meta's spend does not say which paid origin it
/// bought: it is the paid origin's when the report has one, unknown when it
/// has two.
fn origin_rows(sites: &[SiteRead], total_paid: Paid) -> Vec<OriginRow> {
    let mut origins: BTreeMap<&str, Counters> = BTreeMap::new();
    for s in sites {
        for (o, c) in &s.origins {
            origins.entry(o).or_default().add(c);
        }
    }
    let paid_origins = origins.keys().filter(|o| is_paid(o)).count();
    origins
        .iter()
        .map(|(o, c)| {
            let paid = if is_paid(o) && paid_origins == 1 {
                total_paid
            } else {
                Paid::default()
            };
            OriginRow {
                origin: (*o).to_owned(),
                figures: Figures::of(c, paid, is_paid(o)),
            }
        })
        .collect()
}

/// One ad's row: its leads, its spend (known when a synced account of its
/// site covers it), what the catalog says and a thumbnail URL.
async fn ad_row(
    api: &Api,
    s: &SiteRead,
    ad: &str,
    mismatch: bool,
    budgets: &Budgets,
) -> Result<AdRow, ApiError> {
    let entry = s.catalog.get(ad);
    let counters = s.ads.get(ad).copied().unwrap_or_default();
    let covered = s.ad_spend.contains_key(ad)
        || entry
            .and_then(|e| e.ad_account_id.as_ref())
            .is_some_and(|a| s.synced.contains(a));
    let paid = if covered && !budgets.ad_rows_cut && !budgets.days_cut {
        Paid::known(s.ad_spend.get(ad).copied().unwrap_or_default(), !mismatch)
    } else {
        Paid::default()
    };
    let thumbnail_url = match entry.and_then(|e| e.thumbnail_key.as_deref()) {
        Some(key) => Some(
            api.store
                .blobs()
                .thumbnail_url(key, THUMBNAIL_URL_LIFETIME)
                .await?,
        ),
        None => None,
    };
    let field = |pick: fn(&CatalogEntry) -> &Option<String>| entry.and_then(|e| pick(e).clone());
    let view = AdView {
        ad_id: ad.to_owned(),
        ad_name: field(|e| &e.ad_name),
        site_id: s.id.as_str().to_owned(),
        creative_type: field(|e| &e.creative_type),
        ad_status: field(|e| &e.ad_status),
        thumbnail_url,
        figures: Figures::of(&counters, paid, true),
    };
    Ok(AdRow {
        campaign: (
            entry.and_then(|e| e.campaign_id.clone()),
            entry.and_then(|e| e.campaign_name.clone()),
        ),
        adset: (
            entry.and_then(|e| e.adset_id.clone()),
            entry.and_then(|e| e.adset_name.clone()),
        ),
        view,
        counters,
        paid,
    })
}
