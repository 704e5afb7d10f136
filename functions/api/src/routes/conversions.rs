//! `GET /v1/sites/{siteId}/conversions`: the conversions queued for or
//! sent to the site's pixel, newest first, for a "sent back to Meta" list;
//! and the `conversions` block of `meta.status`, read from the sharded
//! counters. Neither ever carries the hashes a conversion was sent with.

use adtrail_domain::capi::parse_conversion_ref;
use adtrail_domain::destinations::PIXEL_SLUG;
use std::collections::HashMap;

use adtrail_domain::SiteId;
use adtrail_domain::ids::check_opaque;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{millis, query};
use crate::{Api, json};

const MAX_LIMIT: i32 = 50;

pub(crate) async fn list(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = query(req, &["limit", "before", "beforeEventId"])?;
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
    let rows = api
        .store
        .conversions()
        .list_conversions(
            site.as_str(),
            limit,
            before.map(|b| (b, before_event.map(String::as_str))),
        )
        .await?;
    let items = history_rows(api, site.as_str(), &rows).await?;
    let next = (items.len() == limit as usize)
        .then(|| {
            rows.last().map(|r| {
                // The row's own reference: a posted event's rows for
                // several destinations share their event id.
                let id = parse_conversion_ref(&r.sk).map_or(r.event_id.as_str(), |(_, id)| id);
                json!({"before": r.created_at, "beforeEventId": id})
            })
        })
        .flatten();
    json(
        200,
        &json!({"siteId": site.as_str(), "conversions": items, "next": next}),
    )
}

/// The rows as the history shows them: the lead as it is now, and the ad's
/// name from the catalog; never a hash.
async fn history_rows(
    api: &Api,
    site: &str,
    rows: &[adtrail_domain::capi::Conversion],
) -> Result<Vec<Value>, ApiError> {
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
    let items: Vec<Value> = rows
        .iter()
        .map(|r| {
            let lead = leads.get(&r.lead_id);
            let ad_id = lead.and_then(|l| l.ad_id.clone());
            json!({
                "eventId": r.event_id,
                "eventName": r.event_name.as_str(),
                "destination": r.destination.as_deref().unwrap_or(PIXEL_SLUG),
                "leadId": lead.map(|l| l.lead_id.clone()),
                "leadLabel": lead.and_then(|l| l.label.clone()),
                "adName": ad_id.as_ref().and_then(|a| names.get(a).cloned().flatten()),
                "adId": ad_id,
                "valueCents": r.value_cents,
                "status": r.status.as_str(),
                "attempts": r.attempts,
                "lastError": r.last_error,
                "createdAt": r.created_at,
                "sentAt": r.sent_at,
            })
        })
        .collect();
    Ok(items)
}
