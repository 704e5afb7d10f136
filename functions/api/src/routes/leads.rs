//! Leads and sales (host only):
//! `POST /v1/sites/{siteId}/leads` records a lead,
//! `POST /v1/sites/{siteId}/leads/{leadKey}/stage` moves it (a stage, a
//! sale, a board column), `DELETE /v1/sites/{siteId}/leads/{leadKey}`
//! removes it with its conversions.
//!
//! Each change is idempotent by `changeId`. The lead, the change marker,
//! the column entry and the conversions it queues are one DynamoDB
//! transaction (the outbox); the send queue's messages follow it, and the
//! sweeper sends again any the queue never got. `meta` never fails a call:
//! malformed, it is ignored as a whole and the answer says so without
//! repeating it. `contact` (plain, as a storefront's events carry it) loses
//! only its malformed fields, each named in `warnings`. A change's events
//! go to the site's pixel and to each of its destinations, each with that
//! platform's own hashes, in the same transaction.

use std::collections::BTreeMap;

use adtrail_changes::{MAX_TRIES, RecordError, Recorded, record};
use adtrail_domain::SiteId;
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::ids::{check_meta_numeric, check_opaque};
use adtrail_domain::leads::{Lead, LeadUpdate, NewLead, Stage, check_origin, is_paid};
use adtrail_domain::time::MINUTE_MS;
use adtrail_store::outbox::LeadWritten;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::Value;

use crate::auth::Caller;
use crate::contact::{ContactBody, read_contact_data};
use crate::error::ApiError;
use crate::input::{json_body, plain_text};
use crate::views::{LeadChangeView, LeadRemovedView, LeadStateView};
use crate::{Api, json};

/// How far ahead of our clock a host's `occurredAt` may be (clock skew).
const MAX_FUTURE_MS: i64 = 5 * MINUTE_MS;
/// The largest sale: ten trillion minor units.
const MAX_REVENUE_CENTS: i64 = 10_000_000_000_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LeadBody {
    lead_key: String,
    change_id: String,
    #[serde(deserialize_with = "crate::input::whole_number")]
    occurred_at: i64,
    origin: String,
    ad_id: Option<String>,
    label: Option<String>,
    column: Option<String>,
    /// Read by hand: it never fails the call.
    meta: Option<Value>,
    contact: Option<ContactBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StageBody {
    change_id: String,
    #[serde(deserialize_with = "crate::input::whole_number")]
    occurred_at: i64,
    stage: Option<String>,
    #[serde(default, deserialize_with = "crate::input::optional_whole_number")]
    revenue_cents: Option<i64>,
    column: Option<String>,
    meta: Option<Value>,
    contact: Option<ContactBody>,
}

/// A change, validated, with what the answer says of its contact data.
struct Change {
    update: LeadUpdate,
    /// Why `meta` was ignored, and the `contact` fields dropped.
    warnings: Vec<String>,
}

fn check_time(field: &str, at: i64, now: i64) -> Result<i64, ApiError> {
    if at < 0 {
        return Err(ApiError::invalid(format!(
            "{field}: must be epoch milliseconds"
        )));
    }
    if at > now + MAX_FUTURE_MS {
        return Err(ApiError::invalid(format!(
            "{field}: must not be in the future"
        )));
    }
    Ok(at)
}

pub(crate) async fn record_lead(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    let body: LeadBody = json_body(req)?;
    let now = api.clock.now_ms();
    check_opaque("leadKey", &body.lead_key)?;
    check_opaque("changeId", &body.change_id)?;
    check_origin(&body.origin)?;
    if let Some(col) = &body.column {
        check_opaque("column", col)?;
    }
    match (&body.ad_id, is_paid(&body.origin)) {
        (Some(ad), _) => check_meta_numeric("adId", ad)?,
        (None, true) => {
            return Err(ApiError::invalid(
                "adId: required for a paid origin (ctwa_ad, lead_form)",
            ));
        }
        (None, false) => {}
    }
    let label = body
        .label
        .as_deref()
        .map(|l| plain_text("label", l, 200))
        .transpose()?;
    let (hashes, contact, warnings) = read_contact_data(body.meta.as_ref(), body.contact);
    let change = Change {
        update: LeadUpdate {
            change_id: body.change_id,
            occurred_at: check_time("occurredAt", body.occurred_at, now)?,
            stage: None,
            revenue_cents: None,
            column: body.column,
            hashes,
            contact,
        },
        warnings,
    };
    let new = NewLead {
        origin: body.origin,
        ad_id: body.ad_id,
        form_id: None,
        label,
    };
    apply(api, &site, &body.lead_key, &change, Some(&new)).await
}

pub(crate) async fn move_lead(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
    lead_key: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    check_opaque("leadKey", lead_key)?;
    let body: StageBody = json_body(req)?;
    let now = api.clock.now_ms();
    check_opaque("changeId", &body.change_id)?;
    let stage = body
        .stage
        .as_deref()
        .map(|s| {
            Stage::parse(s)
                .ok_or_else(|| ApiError::invalid("stage: must be open, qualified, won or lost"))
        })
        .transpose()?;
    if let Some(col) = &body.column {
        check_opaque("column", col)?;
    }
    if stage.is_none() && body.column.is_none() {
        return Err(ApiError::invalid("stage: give a stage, a column or both"));
    }
    if let Some(v) = body.revenue_cents
        && !(0..=MAX_REVENUE_CENTS).contains(&v)
    {
        return Err(ApiError::invalid(
            "revenueCents: must be a whole number of cents from 0 to 10^13",
        ));
    }
    let (hashes, contact, warnings) = read_contact_data(body.meta.as_ref(), body.contact);
    let change = Change {
        update: LeadUpdate {
            change_id: body.change_id,
            occurred_at: check_time("occurredAt", body.occurred_at, now)?,
            stage,
            revenue_cents: body.revenue_cents,
            column: body.column,
            hashes,
            contact,
        },
        warnings,
    };
    apply(api, &site, lead_key, &change, None).await
}

pub(crate) async fn delete_lead(
    api: &Api,
    caller: &Caller,
    site: &str,
    lead_key: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    check_opaque("leadKey", lead_key)?;
    for _ in 0..MAX_TRIES {
        let Some(lead) = api.store.leads().get_lead(site.as_str(), lead_key).await? else {
            return Err(ApiError::not_found("leadKey: no such lead"));
        };
        match api.store.leads().delete_lead(&lead).await? {
            LeadWritten::Written => {
                return json(
                    200,
                    &LeadRemovedView {
                        site_id: site.as_str(),
                        lead_key,
                        lead_id: &lead.lead_id,
                        removed: true,
                    },
                );
            }
            LeadWritten::Raced | LeadWritten::ChangeSeen => continue,
        }
    }
    Err(busy())
}

/// A change's answer: the change, the lead as it left it, the events it
/// queued for the pixel.
fn change_view<'a>(
    site: &'a str,
    lead_key: &'a str,
    change: &'a Change,
    lead: Option<&'a Lead>,
    changed: bool,
    queued: &'a [&'a str],
    duplicate: bool,
) -> LeadChangeView<'a> {
    LeadChangeView {
        site_id: site,
        lead_key,
        change_id: &change.update.change_id,
        changed,
        queued,
        routed: None,
        lead: lead.map(LeadStateView::of),
        warnings: &change.warnings,
        duplicate,
    }
}

fn busy() -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        "the lead kept changing while this was saved; try again",
    )
}

/// Records one change through the shared use case and answers it: `201`
/// when it records a lead, `200` otherwise, `duplicate` when this change
/// was written before.
async fn apply(
    api: &Api,
    site: &SiteId,
    lead_key: &str,
    change: &Change,
    new: Option<&NewLead>,
) -> Result<Response<Body>, ApiError> {
    let recorded = record(
        &api.store,
        api.clock.as_ref(),
        site,
        lead_key,
        &change.update,
        new,
    )
    .await
    .map_err(|e| match e {
        RecordError::NoSite => ApiError::no_site(),
        RecordError::NoLead => ApiError::not_found("leadKey: no such lead"),
        RecordError::Busy => busy(),
        RecordError::Store(e) => e.into(),
    })?;
    let site = site.as_str();
    let view = |lead, changed, queued, duplicate| {
        change_view(site, lead_key, change, lead, changed, queued, duplicate)
    };
    match &recorded {
        Recorded::Written(plan) => {
            let queued: Vec<&str> = plan
                .conversions
                .iter()
                .map(|c| c.event_name.as_str())
                .collect();
            let mut routed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for r in &plan.routed {
                routed
                    .entry(&r.slug)
                    .or_default()
                    .push(r.event_name.as_str());
            }
            let body = LeadChangeView {
                routed: (!routed.is_empty()).then_some(routed),
                ..change_view(
                    site,
                    lead_key,
                    change,
                    Some(&plan.lead),
                    true,
                    &queued,
                    false,
                )
            };
            json(if plan.creates() { 201 } else { 200 }, &body)
        }
        Recorded::Duplicate(lead) => json(200, &view(lead.as_ref(), false, &[], true)),
        Recorded::Unchanged { lead, seen } => json(200, &view(lead.as_ref(), false, &[], *seen)),
    }
}
