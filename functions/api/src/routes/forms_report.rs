//! `GET /v1/reports/forms?siteIds=&from=&to=`: per Lead Ads form of 1 to 10
//! sites, over at most 366 UTC days: its leads, where the rules sent them
//! (the entry, each column, each discard reason) and the returned ones,
//! from the form's day counters; and the board's qualified, won and revenue
//! of the leads that went there, from their cohorts' rollups under the
//! form, as they are now (the same rule as the other reports).

use std::collections::BTreeMap;

use adtrail_domain::leadads::FormFigures;
use adtrail_store::keys::RollupDim;
use lambda_http::{Body, Request, Response};

use crate::auth::Caller;
use crate::cohorts::site_rollups;
use crate::error::ApiError;
use crate::input::report_params;
use crate::routes::webhooks::lead_ads_on;
use crate::views::{FormRow, FormsReportView, LIST_BYTES, keep_most_relevant};
use crate::{Api, json};

/// The longest range, as the leads report's.
const MAX_DAYS: i64 = 366;

pub(crate) async fn forms(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let (ids, from, to) = report_params(req, MAX_DAYS)?;
    caller.may_read_all(&ids)?;
    lead_ads_on(api)?;
    let mut budget = api.limits.rollup_rows;
    let mut rows = vec![];
    for site in &ids {
        let (_, rollups) = site_rollups(api, site, from, to, &mut budget).await?;
        let mut board: BTreeMap<String, FormFigures> = BTreeMap::new();
        for row in &rollups {
            if let RollupDim::Form(form) = &row.dim {
                board
                    .entry(form.clone())
                    .or_default()
                    .add_board(&row.counters);
            }
        }
        let site = site.as_str();
        for form in api.store.forms().site_forms(site).await?.forms {
            let mut f = api
                .store
                .forms()
                .form_day_figures(site, &form.form_id, from, to)
                .await?;
            f.board = board.remove(&form.form_id).unwrap_or_default().board;
            if f == FormFigures::default() {
                continue;
            }
            rows.push((f.leads, FormRow::of(site, &form, f)));
        }
    }
    // Ten sites of up to 500 forms: what does not fit goes, least led first.
    let forms_truncated = keep_most_relevant(&mut rows, LIST_BYTES);
    json(
        200,
        &FormsReportView {
            from,
            to,
            forms: rows.into_iter().map(|(_, row)| row).collect(),
            forms_truncated,
        },
    )
}
