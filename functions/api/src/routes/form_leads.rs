//! A site's form leads as adtrail keeps them (ids, the rules' decision,
//! the origin, a return; never an answer):
//! `GET /v1/sites/{siteId}/form-leads?since=|after=&limit=` lists them
//! oldest first, so a host that missed `FormLeadArrived` events catches
//! up; `GET /v1/sites/{siteId}/form-leads/{leadgenId}` (host) adds the
//! person's answers, read live from Meta with the Page's token and stored
//! nowhere; `POST …/{leadgenId}/return {reason}` marks a bad lead returned,
//! counted in the forms report and sent nowhere.

use adtrail_domain::SiteId;
use adtrail_domain::ids::{check_meta_numeric, check_opaque};
use adtrail_domain::leadads::MAX_REASON;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, millis, query};
use crate::routes::pages::site_page_link;
use crate::routes::webhooks::lead_ads_on;
use crate::views::{AnswerView, FormLeadReturnedView, FormLeadsView, form_lead_view};
use crate::{Api, json};

/// The most form leads one page of the list holds.
const MAX_LIMIT: usize = 500;

pub(crate) async fn list(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = query(req, &["since", "after", "limit"])?;
    caller.may_read(site.as_str())?;
    lead_ads_on(api)?;
    let limit = match params.get("limit") {
        None => 100,
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| ApiError::invalid("limit: must be 1 to 500"))?,
    };
    // Both bounds hold when both are given: after the cursor, from `since`.
    let from = format!("{:013}#", millis(&params, "since")?.unwrap_or(0));
    let after = match params.get("after") {
        Some(cursor) => {
            let valid = cursor.split_once('#').is_some_and(|(at, id)| {
                at.len() == 13
                    && at.bytes().all(|b| b.is_ascii_digit())
                    && check_meta_numeric("after", id).is_ok()
            });
            if !valid {
                return Err(ApiError::invalid("after: the list's next cursor"));
            }
            cursor.clone().max(from)
        }
        None => from,
    };
    // A site that does not exist (or was erased) has no list, as every
    // other list of a site answers: read with its forms, at once.
    let sites = api.store.sites();
    let forms = api.store.forms();
    let (site_row, site_forms) = futures::try_join!(
        sites.get_site(site.as_str()),
        forms.site_forms(site.as_str())
    )?;
    if site_row.is_none() {
        return Err(ApiError::no_site());
    }
    let mut forms: Vec<String> = site_forms.forms.into_iter().map(|f| f.form_id).collect();
    forms.push("unknown".into());
    let leads = api
        .store
        .forms()
        .site_form_leads(site.as_str(), &forms, &after, limit)
        .await?;
    let next = (leads.len() == limit)
        .then(|| leads.last())
        .flatten()
        .map(|l| format!("{:013}#{}", l.created_at, l.leadgen_id));
    let views: Vec<_> = leads.iter().map(form_lead_view).collect();
    json(
        200,
        &FormLeadsView {
            site_id: site.as_str(),
            form_leads: views,
            next,
        },
    )
}

/// The record of a form lead of the site, or `404`.
async fn record(
    api: &Api,
    site: &SiteId,
    leadgen_id: &str,
) -> Result<adtrail_domain::leadads::FormLeadRecord, ApiError> {
    api.store
        .forms()
        .form_lead_by_id(site.as_str(), leadgen_id)
        .await?
        .ok_or_else(|| ApiError::not_found("leadgenId: no such form lead on the site"))
}

pub(crate) async fn read(
    api: &Api,
    caller: &Caller,
    site: &str,
    leadgen_id: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("leadgenId", leadgen_id)?;
    lead_ads_on(api)?;
    let kept = record(api, &site, leadgen_id).await?;
    let link = site_page_link(api, &site, &kept.page_id).await?;
    let token = api
        .store
        .pages()
        .open_page_token(&link.owner_key, &link.page_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found("pageId: the owner's token no longer lists the lead's Page")
        })?;
    let live = api.graph.form_lead(&token, leadgen_id).await?;
    drop(token);
    let questions = api
        .store
        .forms()
        .form(site.as_str(), &kept.form_id)
        .await?
        .map(|(f, _)| f.questions)
        .unwrap_or_default();
    let mut view = form_lead_view(&kept);
    view.answers = Some(
        live.answers
            .0
            .into_iter()
            .map(|(key, values)| AnswerView {
                label: questions
                    .iter()
                    .find(|q| q.key == key)
                    .map(|q| q.label.clone()),
                question_key: key,
                values,
            })
            .collect(),
    );
    let mut response = json(200, &view)?;
    // The person's answers: no cache keeps them.
    response
        .headers_mut()
        .insert("cache-control", http::HeaderValue::from_static("no-store"));
    Ok(response)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReturnBody {
    reason: String,
}

pub(crate) async fn return_lead(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    leadgen_id: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("leadgenId", leadgen_id)?;
    let body: ReturnBody = json_body(req)?;
    if check_opaque("reason", &body.reason).is_err() || body.reason.len() > MAX_REASON {
        return Err(ApiError::invalid(format!(
            "reason: 1 to {MAX_REASON} of letters, digits and . _ : -"
        )));
    }
    caller.may_configure(site.as_str())?;
    lead_ads_on(api)?;
    let kept = record(api, &site, leadgen_id).await?;
    let now = api.clock.now_ms();
    let first = api
        .store
        .forms()
        .return_form_lead(&kept, &body.reason, now)
        .await?;
    let kept = record(api, &site, leadgen_id).await?;
    json(
        200,
        &FormLeadReturnedView {
            site_id: site.as_str(),
            form_lead: form_lead_view(&kept),
            duplicate: !first,
        },
    )
}
