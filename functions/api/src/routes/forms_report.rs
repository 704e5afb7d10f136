//! `GET /v1/reports/forms?siteIds=&from=&to=`: per Lead Ads form of 1 to 10
//! sites, over at most 90 UTC days (how long a form lead's record is
//! kept): its leads, where the rules sent them (the entry, each column,
//! each discard reason), the returned ones, and the board's qualified, won
//! and revenue of those that went there, as they are now.

use std::collections::BTreeMap;

use adtrail_domain::leadads::form_figures;
use adtrail_domain::time::DAY_MS;
use lambda_http::{Body, Request, Response};
use serde::Serialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::report_params;
use crate::routes::webhooks::lead_ads_on;
use crate::{Api, json};

/// The longest range: a form lead's record is kept 90 days.
const MAX_DAYS: i64 = 90;
/// Records read per form at most; past it the report is `partial`.
const MAX_READ: usize = 5_000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FormRow {
    site_id: String,
    page_id: String,
    form_id: String,
    name: String,
    leads: i64,
    entry: i64,
    columns: Vec<Count>,
    discarded: Vec<Count>,
    qualified: i64,
    won: i64,
    revenue_cents: i64,
    returned: i64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Count {
    key: String,
    leads: i64,
}

fn counts(map: BTreeMap<String, i64>) -> Vec<Count> {
    map.into_iter()
        .map(|(key, leads)| Count { key, leads })
        .collect()
}

pub(crate) async fn forms(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let (ids, from, to) = report_params(req, MAX_DAYS)?;
    caller.may_read_all(&ids)?;
    lead_ads_on(api)?;
    let mut rows = vec![];
    let mut partial = false;
    for site in &ids {
        let site = site.as_str();
        for form in api.store.forms().site_forms(site).await?.forms {
            let (records, more) = api
                .store
                .forms()
                .form_leads(site, &form.form_id, from, to + DAY_MS, MAX_READ)
                .await?;
            partial |= more;
            if records.is_empty() {
                continue;
            }
            let keys: Vec<String> = records.iter().filter_map(|r| r.lead_key()).collect();
            let leads = api.store.leads().get_leads(site, &keys).await?;
            let f = form_figures(&records, |r| {
                let key = r.lead_key()?;
                leads.iter().find(|l| l.lead_key == key)
            });
            rows.push(FormRow {
                site_id: site.to_owned(),
                page_id: form.page_id.clone(),
                form_id: form.form_id.clone(),
                name: form.name.clone(),
                leads: f.leads,
                entry: f.entry,
                columns: counts(f.columns),
                discarded: counts(f.discarded),
                qualified: f.board.qualified,
                won: f.board.won,
                revenue_cents: f.board.revenue_cents,
                returned: f.returned,
            });
        }
    }
    json(
        200,
        &serde_json::json!({"from": from, "to": to, "forms": rows, "partial": partial}),
    )
}
