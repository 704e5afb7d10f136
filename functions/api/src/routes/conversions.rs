//! `GET /v1/sites/{siteId}/conversions`: the conversions queued for or
//! sent to the site's pixel, newest first, for a "sent back to Meta" list;
//! and the `conversions` block of `meta.status`, read from the sharded
//! counters. Neither ever carries the hashes a conversion was sent with.

use adtrail_domain::capi::parse_conversion_ref;
use adtrail_domain::destinations::{PIXEL_SLUG, Slug};
use adtrail_store::conversions::ListFilter;
use std::collections::HashMap;

use adtrail_domain::SiteId;
use adtrail_domain::ids::check_opaque;
use lambda_http::{Body, Request, Response};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{millis, query};
use crate::views::{ConversionView, ConversionsCursor, ConversionsView};
use crate::{Api, json};

const MAX_LIMIT: i32 = 50;

pub(crate) async fn list(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = query(
        req,
        &["limit", "before", "beforeEventId", "destination", "status"],
    )?;
    let filter = ListFilter {
        destination: params
            .get("destination")
            .map(|d| Slug::parse("destination", d).map(|s| s.to_string()))
            .transpose()?,
        failed_only: match params.get("status").map(String::as_str) {
            None => false,
            Some("failed") => true,
            Some(_) => return Err(ApiError::invalid("status: only failed can be asked")),
        },
    };
    let limit = match params.get("limit") {
        None => MAX_LIMIT,
        Some(l) => l
            .parse::<i32>()
            .ok()
            .filter(|l| (1..=MAX_LIMIT).contains(l))
            .ok_or_else(|| ApiError::invalid("limit: must be 1 to 50"))?,
    };
    let before = millis(&params, "before")?;
    let before_event = params.get("beforeEventId");
    if let Some(e) = before_event {
        check_opaque("beforeEventId", e)?;
        if before.is_none() {
            return Err(ApiError::invalid("beforeEventId: needs before"));
        }
    }
    caller.may_read(site.as_str())?;
    if api.store.sites().get_site(site.as_str()).await?.is_none() {
        return Err(ApiError::no_site());
    }
    let (rows, stopped_at) = api
        .store
        .conversions()
        .list_filtered(
            site.as_str(),
            limit as usize,
            before.map(|b| (b, before_event.map(String::as_str))),
            &filter,
        )
        .await?;
    let items = history_rows(api, site.as_str(), &rows).await?;
    // The cursor is a row's own reference (a posted event's rows for
    // several destinations share their event id): the last one shown, or
    // the last one a filtered read got to.
    let last = if items.len() == limit as usize {
        rows.last().map(|r| r.sk.clone())
    } else {
        stopped_at
    };
    let next = last
        .as_deref()
        .and_then(parse_conversion_ref)
        .map(|(at, id)| ConversionsCursor {
            before: at,
            before_event_id: id.to_owned(),
        });
    json(
        200,
        &ConversionsView {
            site_id: site.as_str(),
            lead_key: None,
            conversions: items,
            next: Some(next),
        },
    )
}

/// The rows as the history shows them: the lead as it is now, and the ad's
/// name from the catalog; never a hash.
async fn history_rows(
    api: &Api,
    site: &str,
    rows: &[adtrail_domain::capi::Conversion],
) -> Result<Vec<ConversionView>, ApiError> {
    // The lead as it is now, and the ad's name from the catalog.
    // A posted event's rows have no lead.
    let mut lead_keys: Vec<String> = rows
        .iter()
        .filter(|r| !r.lead_key.is_empty())
        .map(|r| r.lead_key.clone())
        .collect();
    lead_keys.sort();
    lead_keys.dedup();
    let leads: HashMap<String, _> = api
        .store
        .leads()
        .get_leads(site, &lead_keys)
        .await?
        .into_iter()
        .map(|l| (l.lead_id.clone(), l))
        .collect();
    let mut ads: Vec<String> = leads.values().filter_map(|l| l.ad_id.clone()).collect();
    ads.sort();
    ads.dedup();
    let names: HashMap<String, Option<String>> = api
        .store
        .catalog()
        .catalog_entries(site, &ads)
        .await?
        .into_iter()
        .map(|e| (e.ad_id, e.ad_name))
        .collect();
    let items: Vec<ConversionView> = rows
        .iter()
        .map(|r| {
            let lead = leads.get(&r.lead_id);
            let ad_id = lead.and_then(|l| l.ad_id.clone());
            ConversionView {
                event_id: r.event_id.clone(),
                event_name: r.event_name.as_str(),
                destination: r.destination.as_deref().unwrap_or(PIXEL_SLUG).to_owned(),
                lead_id: lead.map(|l| l.lead_id.clone()),
                lead_label: lead.and_then(|l| l.label.clone()),
                ad_name: ad_id.as_ref().and_then(|a| names.get(a).cloned().flatten()),
                ad_id,
                value_cents: r.value_cents,
                status: r.status.as_str(),
                attempts: r.attempts,
                last_error: r.last_error.clone(),
                created_at: r.created_at,
                sent_at: r.sent_at,
            }
        })
        .collect();
    Ok(items)
}

/// `GET /v1/sites/{siteId}/leads/{leadKey}/conversions`: every conversion
/// a lead queued, whatever its destination, oldest first.
pub(crate) async fn of_lead(
    api: &Api,
    caller: &Caller,
    site: &str,
    lead_key: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    check_opaque("leadKey", lead_key)?;
    caller.may_read(site.as_str())?;
    let Some(lead) = api.store.leads().get_lead(site.as_str(), lead_key).await? else {
        return Err(ApiError::not_found("leadKey: no such lead"));
    };
    let refs = lead.row_refs();
    let mut rows = api
        .store
        .conversions()
        .get_conversions(site.as_str(), &refs)
        .await?;
    rows.sort_by(|a, b| a.sk.cmp(&b.sk));
    let items = history_rows(api, site.as_str(), &rows).await?;
    json(
        200,
        &ConversionsView {
            site_id: site.as_str(),
            lead_key: Some(lead_key),
            conversions: items,
            next: None,
        },
    )
}
