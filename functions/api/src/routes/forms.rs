//! Lead Ads forms on a site and the host's rules for each:
//! `GET /v1/sites/{siteId}/pages/{pageId}/forms` (the linked Page's forms,
//! their questions and options, the last 30 days' leads by day, the rules
//! in short), `POST …/forms/refresh` (read them from Meta again),
//! `GET`/`PUT /v1/sites/{siteId}/forms/{formId}/rules` (an entry column and
//! ordered rules, first match wins, each with its count over the last 30
//! days) and `POST …/rules/simulate` (a rule set decided over the last 30
//! days' leads, saved nowhere). Columns must be the board's; question keys
//! and answers the form's multiple-choice questions and option keys.

use adtrail_changes::forms::{FormsError, read_page_forms as read_forms};
use adtrail_domain::SiteId;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_domain::leadads::{
    Brakes, ContactMode, FirstContact, FormLeadRecord, FormRule, FormRules, LeadForm, PageLink,
    RuleTarget, RulesTally, check_rules, tally,
};
use adtrail_domain::time::{DAY_MS, utc_day};
use adtrail_store::forms::SiteForms;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::json_body;
use crate::routes::pages::site_page_link;
use crate::routes::webhooks::lead_ads_on;
use crate::views::{
    DayCount, LIST_BYTES, PageFormsView, Recent, form_view, keep_most_relevant, rules_view,
    simulation_view,
};
use crate::{Api, json};

/// The window the counts, the series and the simulations read.
const WINDOW_MS: i64 = 30 * DAY_MS;
/// Leads read per form and window at most; past it, answers are `partial`.
const MAX_READ: usize = 5_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RulesBody {
    entry_column: Option<String>,
    #[serde(default)]
    rules: Vec<RuleBody>,
    first_contact: Option<FirstContactBody>,
    #[serde(default)]
    whatsapp_button_confirmed: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FirstContactBody {
    mode: String,
    text: Option<String>,
    brakes: Option<BrakesBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BrakesBody {
    #[serde(default)]
    business_hours_only: bool,
    #[serde(deserialize_with = "crate::input::whole_number")]
    max_per_hour: i64,
    #[serde(deserialize_with = "crate::input::whole_number")]
    wait_minutes: i64,
}

/// The body's first contact, its mode read.
fn read_first_contact(body: Option<FirstContactBody>) -> Result<Option<FirstContact>, ApiError> {
    body.map(|c| {
        Ok(FirstContact {
            mode: ContactMode::parse(&c.mode).ok_or_else(|| {
                ApiError::invalid("firstContact.mode: lead_starts, one_click or automatic")
            })?,
            text: c.text,
            brakes: c.brakes.map(|b| Brakes {
                business_hours_only: b.business_hours_only,
                max_per_hour: b.max_per_hour,
                wait_minutes: b.wait_minutes,
            }),
        })
    })
    .transpose()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RuleBody {
    question_key: String,
    answers: Vec<String>,
    to: TargetBody,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TargetBody {
    column: Option<String>,
    discard: Option<String>,
}

/// The body as rules, each rule's target one of a column or a reason.
fn read_rules(body: RulesBody) -> Result<FormRules, ApiError> {
    let rules = body
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let to = match (r.to.column, r.to.discard) {
                (Some(c), None) => RuleTarget::Column(c),
                (None, Some(d)) => RuleTarget::Discard(d),
                _ => {
                    return Err(ApiError::invalid(format!(
                        "rules[{i}].to: give a column or a discard reason, not both"
                    )));
                }
            };
            Ok(FormRule {
                question_key: r.question_key,
                answers: r.answers,
                to,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(FormRules {
        entry_column: body.entry_column,
        rules,
        first_contact: read_first_contact(body.first_contact)?,
        whatsapp_button_confirmed: body.whatsapp_button_confirmed,
    })
}

/// A form's leads of the last 30 days.
async fn recent_leads(
    api: &Api,
    site: &str,
    form: &str,
) -> Result<(Vec<FormLeadRecord>, bool), ApiError> {
    let now = api.clock.now_ms();
    Ok(api
        .store
        .forms()
        .form_leads(site, form, now - WINDOW_MS, now + 1, MAX_READ)
        .await?)
}

/// The last 30 UTC days of a form (`first` the earliest), as the forms
/// list shows them: its day counters' leads, and its newest lead's time.
fn recent(days: &[(i64, u64)], last_lead_at: Option<i64>, first: i64) -> Recent {
    let daily: Vec<DayCount> = (0..30)
        .map(|i| {
            let day_start = first + i * DAY_MS;
            DayCount {
                day_start,
                leads: days
                    .iter()
                    .filter(|(day, _)| *day == day_start)
                    .map(|(_, n)| usize::try_from(*n).unwrap_or(usize::MAX))
                    .sum(),
            }
        })
        .collect();
    Recent {
        leads: daily.iter().map(|d| d.leads).sum(),
        daily,
        last_lead_at,
        // Counted, not read: the counters hold every lead.
        partial: false,
    }
}

/// A form and its last 30 UTC days (today's the last).
async fn form_recent<'a>(
    api: &Api,
    site: &str,
    form: &'a LeadForm,
    now: i64,
) -> Result<(&'a LeadForm, Recent), ApiError> {
    let today = utc_day(now);
    let first = today - 29 * DAY_MS;
    let store = api.store.forms();
    let days = store
        .form_daily_leads(site, &form.form_id, first, today)
        .await?;
    let last = store
        .latest_form_lead_at(site, &form.form_id, first, now + 1)
        .await?;
    Ok((form, recent(&days, last, first)))
}

/// Forms whose last 30 days are read at once: a Page lists up to 500.
const FORMS_READ_AT_ONCE: usize = 8;

async fn answer_forms(
    api: &Api,
    link: &PageLink,
    all: &SiteForms,
) -> Result<Response<Body>, ApiError> {
    use futures::StreamExt;
    let (site, page_id) = (&link.site_id, &link.page_id);
    let now = api.clock.now_ms();
    // Two small reads a form (its day counters, its newest lead), where
    // reading its 30 days of leads took up to 5,000 records.
    let reads: Vec<_> = all
        .forms
        .iter()
        .filter(|f| &f.page_id == page_id)
        .map(|form| form_recent(api, site, form, now))
        .collect();
    let mut forms = Vec::with_capacity(all.forms.len());
    let mut pending = futures::stream::iter(reads).buffered(FORMS_READ_AT_ONCE);
    while let Some(read) = pending.next().await {
        let (form, recent) = read?;
        let relevance = (form.status == "ACTIVE", recent.leads, recent.last_lead_at);
        forms.push((
            relevance,
            form_view(form, all.rules.get(&form.form_id), recent),
        ));
    }
    // Up to 500 forms of up to 64 KB of questions each.
    let forms_truncated = keep_most_relevant(&mut forms, LIST_BYTES);
    json(
        200,
        &PageFormsView {
            site_id: site,
            page_id,
            last_reconcile_at: link.last_reconcile_at,
            reconciled_through: link.reconciled_through,
            last_error: link.last_error.as_deref(),
            forms: forms.into_iter().map(|(_, view)| view).collect(),
            forms_truncated,
        },
    )
}

/// `GET …/forms` (`refresh: false`, a reader's) and `POST …/forms/refresh`
/// (`refresh: true`, a configurer's: read from Meta first).
pub(crate) async fn page_forms(
    api: &Api,
    caller: &Caller,
    site: &str,
    page_id: &str,
    refresh: bool,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("pageId", page_id)?;
    if refresh {
        caller.may_configure(site.as_str())?;
    } else {
        caller.may_read(site.as_str())?;
    }
    lead_ads_on(api)?;
    let link = site_page_link(api, &site, page_id).await?;
    if refresh {
        read_page_forms(api, site.as_str(), &link.owner_key, page_id).await?;
    }
    let all = api.store.forms().site_forms(site.as_str()).await?;
    answer_forms(api, &link, &all).await
}

/// Reads a linked Page's forms from Meta with its token and stores them.
pub(crate) async fn read_page_forms(
    api: &Api,
    site: &str,
    owner: &str,
    page_id: &str,
) -> Result<Vec<LeadForm>, ApiError> {
    let Some(token) = api.store.pages().open_page_token(owner, page_id).await? else {
        return Err(ApiError::not_found(
            "pageId: the owner's token no longer lists this Page (connect or refresh first)",
        ));
    };
    let now = api.clock.now_ms();
    read_forms(&api.store, &api.graph, site, page_id, &token, now)
        .await
        .map_err(|e| match e {
            FormsError::Graph(e) => e.into(),
            FormsError::Store(e) => e.into(),
        })
}

/// The form on the site, or 404.
async fn site_form(
    api: &Api,
    site: &SiteId,
    form_id: &str,
) -> Result<(LeadForm, Option<(FormRules, i64)>), ApiError> {
    api.store
        .forms()
        .form(site.as_str(), form_id)
        .await?
        .ok_or_else(|| ApiError::not_found("formId: no such form on the site's Pages"))
}

pub(crate) async fn get_rules(
    api: &Api,
    caller: &Caller,
    site: &str,
    form_id: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("formId", form_id)?;
    caller.may_read(site.as_str())?;
    lead_ads_on(api)?;
    let (_, rules) = site_form(api, &site, form_id).await?;
    let (leads, partial) = recent_leads(api, site.as_str(), form_id).await?;
    let set = rules.as_ref().map(|r| r.0.clone()).unwrap_or_default();
    let counted = tally(&set, leads.iter().map(|l| &l.choices));
    json(
        200,
        &rules_view(site.as_str(), form_id, rules.as_ref(), &counted, partial),
    )
}

/// A rule set a host sends (to save or to simulate): the site, parsed;
/// the caller allowed to configure it; the body's rules checked against
/// the form and the board; and the last 30 days' leads, decided again.
async fn sent_rules(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    form_id: &str,
) -> Result<(SiteId, FormRules, RulesTally, bool), ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_meta_numeric("formId", form_id)?;
    caller.may_configure(site.as_str())?;
    lead_ads_on(api)?;
    let (form, _) = site_form(api, &site, form_id).await?;
    let rules = read_rules(json_body(req)?)?;
    let board = api.store.boards().get_board(site.as_str()).await?;
    check_rules(&rules, &form, &board).map_err(ApiError::invalid)?;
    let (leads, partial) = recent_leads(api, site.as_str(), form_id).await?;
    let counted = tally(&rules, leads.iter().map(|l| &l.choices));
    Ok((site, rules, counted, partial))
}

pub(crate) async fn put_rules(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    form_id: &str,
) -> Result<Response<Body>, ApiError> {
    let (site, rules, counted, partial) = sent_rules(api, caller, req, site, form_id).await?;
    let now = api.clock.now_ms();
    api.store
        .forms()
        .put_rules(site.as_str(), form_id, &rules, now)
        .await?;
    let saved = (rules, now);
    json(
        200,
        &rules_view(site.as_str(), form_id, Some(&saved), &counted, partial),
    )
}

pub(crate) async fn simulate(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    form_id: &str,
) -> Result<Response<Body>, ApiError> {
    let (_, _, counted, partial) = sent_rules(api, caller, req, site, form_id).await?;
    json(200, &simulation_view(&counted, partial))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_30_days_come_from_the_day_counters() {
        let first = 1_780_272_000_000; // a UTC midnight
        let days = [
            (first, 2),
            (first + 3 * DAY_MS, 5),
            (first + 29 * DAY_MS, 1),
        ];
        let r = recent(&days, Some(first + 29 * DAY_MS + 60_000), first);
        assert_eq!((r.leads, r.partial), (8, false));
        assert_eq!(r.daily.len(), 30);
        assert_eq!(r.daily[0].leads, 2);
        assert_eq!(r.daily[3].leads, 5);
        assert_eq!(r.daily[29].day_start, first + 29 * DAY_MS);
        assert_eq!(r.daily[29].leads, 1);
        assert_eq!(r.daily.iter().filter(|d| d.leads == 0).count(), 27);
        let none = recent(&[], None, first);
        assert_eq!((none.leads, none.last_lead_at), (0, None));
    }
}
