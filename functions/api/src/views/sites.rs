//! The answers about a site as a whole: the site itself (and its list),
//! its erasure's progress, and its destinations with their metrics.

use std::collections::BTreeMap;

use adtrail_store::conversions::Flow;
use adtrail_store::erase::Erasure;
use serde::Serialize;

use super::DestinationView;

/// `GET /v1/sites`: a page of the sites in the caller's grant, and the
/// id the next page starts after (`null`: no more).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SitesView {
    pub(crate) sites: Vec<SiteView>,
    pub(crate) next: Option<String>,
}

/// A site as registered.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SiteView {
    pub(crate) site_id: String,
    pub(crate) name: String,
    pub(crate) currency: String,
    pub(crate) country: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
}

impl From<adtrail_store::sites::Site> for SiteView {
    fn from(s: adtrail_store::sites::Site) -> Self {
        Self {
            site_id: s.site_id,
            name: s.name,
            currency: s.currency,
            country: s.country,
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

/// `GET /v1/sites/{siteId}/destinations/{slug}/metrics`: the rows queued,
/// sent and failed in all, by event (the platform's name) and by day.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationMetricsView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) slug: &'a str,
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) totals: FlowView,
    pub(crate) by_event: BTreeMap<&'static str, FlowView>,
    pub(crate) days: Vec<FlowDay>,
}

/// Rows queued, sent and failed.
#[derive(Serialize)]
pub(crate) struct FlowView {
    queued: i64,
    sent: i64,
    failed: i64,
}

impl FlowView {
    pub(crate) fn of(f: Flow) -> Self {
        Self {
            queued: f.queued,
            sent: f.sent,
            failed: f.failed,
        }
    }
}

/// One UTC day's rows.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FlowDay {
    pub(crate) day_start: i64,
    #[serde(flatten)]
    pub(crate) flow: FlowView,
}

/// One destination of a site (registered, or read).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationSetView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) destination: DestinationView<'a>,
}

/// A site's destinations, its pixel first as `meta`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationsView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) destinations: Vec<DestinationView<'a>>,
}

/// `DELETE /v1/sites/{siteId}/destinations/{slug}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationArchivedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) slug: &'a str,
    pub(crate) archived: bool,
}

/// `DELETE /v1/sites/{siteId}`: the site is gone; the sweeper deletes the
/// rest of what it had, `deletedItems` so far.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErasureView<'a> {
    site_id: &'a str,
    erasing: bool,
    started_at: i64,
    deleted_items: i64,
}

impl<'a> ErasureView<'a> {
    pub(crate) fn of(e: &'a Erasure) -> Self {
        Self {
            site_id: &e.site_id,
            erasing: true,
            started_at: e.started_at,
            deleted_items: e.deleted_items,
        }
    }
}
