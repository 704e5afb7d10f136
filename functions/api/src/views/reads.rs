//! The answers of the reads: where each site stands with Meta
//! (`GET /v1/meta/status`) and a site's spend per day and per ad
//! (`GET /v1/sites/{siteId}/spend`). Money is `null` where the spend basis
//! says it is unknown or would sum two currencies.

use std::collections::BTreeMap;

use adtrail_domain::capi::EventName;
use adtrail_domain::spend::{SpendBasis, SpendFigures};
use serde::Serialize;

use super::{LinkView, PixelView};

/// `GET /v1/meta/status`.
#[derive(Serialize)]
pub(crate) struct StatusView<'a> {
    pub(crate) sites: Vec<SiteStatusView<'a>>,
}

/// One site's standing: its pixel, its conversions, its accounts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SiteStatusView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) linked: bool,
    pub(crate) pixel: PixelView<'a>,
    pub(crate) conversions: &'a ConversionsBlock,
    pub(crate) ad_accounts: Vec<LinkView<'a>>,
}

/// A site's conversions by status; with `now`, the events Meta accepted
/// in the 30 UTC days up to it (every event, with its zero) and today;
/// each destination's own totals, the pixel's as `meta`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionsBlock {
    pub(crate) pending: i64,
    pub(crate) sent: i64,
    pub(crate) failed: i64,
    pub(crate) last30d: Option<BTreeMap<&'static str, i64>>,
    pub(crate) sent_today: Option<i64>,
    pub(crate) destinations: BTreeMap<String, FlowTotals>,
}

impl ConversionsBlock {
    /// Every event's count in the window, with its zero: a client reads a
    /// fixed shape.
    pub(crate) fn every_event(by_event: impl Fn(EventName) -> i64) -> BTreeMap<&'static str, i64> {
        EventName::ALL
            .into_iter()
            .map(|e| (e.as_str(), by_event(e)))
            .collect()
    }
}

/// Pending, sent and failed rows.
#[derive(Serialize)]
pub(crate) struct FlowTotals {
    pub(crate) pending: i64,
    pub(crate) sent: i64,
    pub(crate) failed: i64,
}

/// Spend, impressions and clicks as an answer gives them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpendTriple {
    spend_cents: Option<i64>,
    impressions: Option<i64>,
    clicks: Option<i64>,
}

impl SpendTriple {
    pub(crate) fn of(basis: &SpendBasis, f: SpendFigures) -> Self {
        Self {
            spend_cents: basis.money(f.spend_cents),
            impressions: basis.count(f.impressions),
            clicks: basis.count(f.clicks),
        }
    }
}

/// One day of a site's spend.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpendDay {
    pub(crate) day_start: i64,
    #[serde(flatten)]
    pub(crate) figures: SpendTriple,
}

/// `GET /v1/sites/{siteId}/spend`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpendView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) currency: &'a str,
    pub(crate) spend_currency: Option<&'a str>,
    pub(crate) currency_mismatch: bool,
    pub(crate) totals: SpendTriple,
    pub(crate) days: Vec<SpendDay>,
    pub(crate) ads: Vec<AdSpend>,
    pub(crate) ads_incomplete: bool,
    pub(crate) ad_accounts: Vec<LinkView<'a>>,
}

/// One ad's spend over the range, with what the catalog says of it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AdSpend {
    pub(crate) ad_id: String,
    pub(crate) ad_account_id: String,
    pub(crate) ad_name: Option<String>,
    pub(crate) adset_id: Option<String>,
    pub(crate) adset_name: Option<String>,
    pub(crate) campaign_id: Option<String>,
    pub(crate) campaign_name: Option<String>,
    pub(crate) ad_status: Option<String>,
    pub(crate) creative_type: Option<String>,
    pub(crate) spend_cents: Option<i64>,
    pub(crate) impressions: i64,
    pub(crate) clicks: i64,
}
