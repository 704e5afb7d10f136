//! The daily report's answer: each UTC day's cohort next to the spend,
//! with the derived metrics where the spend bought the leads.

use serde::Serialize;

/// `GET /v1/reports/daily`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DailyView<'a> {
    pub(crate) site_ids: Vec<&'a str>,
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) spend_currency: Option<&'a str>,
    pub(crate) currency_mismatch: bool,
    pub(crate) spend_incomplete: bool,
    pub(crate) days: Vec<DayRow>,
}

/// One day: the counters of the leads that arrived on it, the spend, and
/// what the spend bought.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DayRow {
    pub(crate) day_start: i64,
    pub(crate) leads: i64,
    pub(crate) qualified: i64,
    pub(crate) won: i64,
    pub(crate) revenue_cents: i64,
    pub(crate) spend_cents: Option<i64>,
    pub(crate) cost_per_lead_cents: Option<i64>,
    pub(crate) cost_per_qualified_cents: Option<i64>,
    pub(crate) cost_per_sale_cents: Option<i64>,
    pub(crate) return_on_spend: Option<f64>,
    pub(crate) return_band: Option<&'static str>,
}
