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
//! repeating it.

use adtrail_domain::SiteId;
use adtrail_domain::conversions::{
    ContactHashes, EventName, LeadChange, LeadState, PixelReady, Stage, apply_change, check_origin,
    event_id, events_for, is_paid, parse_meta, utc_day,
};
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::ids::{check_meta_numeric, check_opaque};
use adtrail_domain::metrics::Counters;
use adtrail_domain::time::MINUTE_MS;
use adtrail_store::board::Board;
use adtrail_store::connections::ConnectionStatus;
use adtrail_store::conversions::{ConversionStatus, SendMessage};
use adtrail_store::leads::{Lead, LeadWrite, LeadWritten, NewConversion, new_conversion_sk};
use adtrail_store::pixels::PixelSource;
use adtrail_store::sites::Site;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, plain_text};
use crate::{Api, json};

/// How far ahead of our clock a host's `occurredAt` may be (clock skew).
const MAX_FUTURE_MS: i64 = 5 * MINUTE_MS;
/// Tries of a change that raced another change of the same lead.
const MAX_TRIES: usize = 4;
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
}

/// A change, validated.
struct Change {
    change_id: String,
    occurred_at: i64,
    stage: Option<Stage>,
    revenue_cents: Option<i64>,
    column: Option<String>,
    hashes: Option<ContactHashes>,
    /// Why `meta` was ignored, if it was.
    meta_warning: Option<String>,
}

/// What a new lead brings.
struct NewLead {
    origin: String,
    ad_id: Option<String>,
    label: Option<String>,
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

/// Reads `meta`, never failing: the warning names why, not what.
fn read_meta(meta: Option<&Value>) -> (Option<ContactHashes>, Option<String>) {
    match meta {
        None | Some(Value::Null) => (None, None),
        Some(v) => match parse_meta(v) {
            Ok(h) => (Some(h), None),
            Err(why) => {
                tracing::warn!(reason = ?why, "meta ignored");
                (
                    None,
                    Some(format!(
                        "meta: ignored ({why:?}); expected {{ph: [SHA-256 hex] (at most 10), externalId?: SHA-256 hex}}"
                    )),
                )
            }
        },
    }
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
    let (hashes, meta_warning) = read_meta(body.meta.as_ref());
    let change = Change {
        change_id: body.change_id,
        occurred_at: check_time("occurredAt", body.occurred_at, now)?,
        stage: None,
        revenue_cents: None,
        column: body.column,
        hashes,
        meta_warning,
    };
    let new = NewLead {
        origin: body.origin,
        ad_id: body.ad_id,
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
    let (hashes, meta_warning) = read_meta(body.meta.as_ref());
    let change = Change {
        change_id: body.change_id,
        occurred_at: check_time("occurredAt", body.occurred_at, now)?,
        stage,
        revenue_cents: body.revenue_cents,
        column: body.column,
        hashes,
        meta_warning,
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
        let Some(lead) = api.aws.get_lead(site.as_str(), lead_key).await? else {
            return Err(ApiError::not_found("leadKey: no such lead"));
        };
        match api.aws.delete_lead(&lead).await? {
            LeadWritten::Written => {
                return json(
                    200,
                    &json!({"siteId": site.as_str(), "leadKey": lead_key, "leadId": lead.lead_id, "removed": true}),
                );
            }
            LeadWritten::Raced | LeadWritten::ChangeSeen => continue,
        }
    }
    Err(busy())
}

fn busy() -> ApiError {
    ApiError::new(
        ErrorCode::Conflict,
        "the lead kept changing while this was saved; try again",
    )
}

/// Whether the site can queue now, and whether new leads send `Lead`.
async fn pixel_ready(api: &Api, site: &str) -> Result<Option<PixelReady>, ApiError> {
    let Some(pixel) = api.aws.get_pixel(site).await? else {
        return Ok(None);
    };
    if !pixel.enabled || pixel.stopped || pixel.not_granted {
        return Ok(None);
    }
    if let PixelSource::Connection { owner_key } = &pixel.source {
        match api.aws.get_connection(owner_key).await? {
            Some(c) if c.status != ConnectionStatus::Invalid => {}
            _ => return Ok(None),
        }
    }
    Ok(Some(PixelReady {
        send_lead_event: pixel.send_lead_event,
    }))
}

/// Decides and writes one change, again from fresh reads if it raced.
async fn apply(
    api: &Api,
    site: &SiteId,
    lead_key: &str,
    change: &Change,
    new: Option<&NewLead>,
) -> Result<Response<Body>, ApiError> {
    let Some(site_row) = api.aws.get_site(site.as_str()).await? else {
        return Err(ApiError::not_found("siteId: no such site"));
    };
    for _ in 0..MAX_TRIES {
        let now = api.clock.now_ms();
        let lead = api.aws.get_lead(site.as_str(), lead_key).await?;
        if lead.is_none() && new.is_none() {
            return Err(ApiError::not_found("leadKey: no such lead"));
        }
        let board = api.aws.get_board(site.as_str()).await?;
        let pixel = if change.hashes.is_some() {
            pixel_ready(api, site.as_str()).await?
        } else {
            None
        };
        let current = lead.clone();
        let Some(plan) = plan_write(&site_row, lead, lead_key, change, new, &board, pixel, now)
        else {
            // Nothing to write; say whether it is a change seen before.
            let mut body = answer(
                site.as_str(),
                lead_key,
                current.as_ref(),
                false,
                &[],
                change,
            );
            if api
                .aws
                .change_seen(site.as_str(), &change.change_id)
                .await?
            {
                body["duplicate"] = json!(true);
            }
            return json(200, &body);
        };
        let plan = reopen_or_skip(api, plan).await?;
        let created = plan.lead.version == 0;
        match api.aws.write_lead_change(&plan).await? {
            LeadWritten::Written => {
                let queued: Vec<&str> = plan
                    .conversions
                    .iter()
                    .map(|c| c.event_name.as_str())
                    .collect();
                enqueue(api, site.as_str(), &plan.conversions).await;
                return json(
                    if created { 201 } else { 200 },
                    &answer(
                        site.as_str(),
                        lead_key,
                        Some(&plan.lead),
                        true,
                        &queued,
                        change,
                    ),
                );
            }
            LeadWritten::ChangeSeen => {
                let lead = api.aws.get_lead(site.as_str(), lead_key).await?;
                let mut body = answer(site.as_str(), lead_key, lead.as_ref(), false, &[], change);
                body["duplicate"] = json!(true);
                return json(200, &body);
            }
            LeadWritten::Raced => continue,
        }
    }
    Err(busy())
}

/// The write a change makes, or `None` when it changes nothing (a move
/// older than the last, or into the column the lead is in, with nothing
/// else).
#[allow(clippy::too_many_arguments)]
fn plan_write(
    site: &Site,
    lead: Option<Lead>,
    lead_key: &str,
    change: &Change,
    new: Option<&NewLead>,
    board: &Board,
    pixel: Option<PixelReady>,
    now: i64,
) -> Option<LeadWrite> {
    // An undeclared column is ignored, never an error.
    let column = change.column.as_deref().filter(|c| board.declares(c));
    let state = lead.as_ref().map(|l| LeadState {
        column: l.column.clone(),
        stage: l.stage,
        last_move_at: l.last_move_at,
    });
    let applied = apply_change(
        state.as_ref(),
        &LeadChange {
            occurred_at: change.occurred_at,
            stage: change.stage,
            revenue_cents: change.revenue_cents,
            column,
        },
    );
    let is_new = lead.is_none();
    if !applied.accepted {
        return None;
    }
    let before = lead
        .as_ref()
        .map(|l| Counters::of_lead(l.stage, l.revenue_cents));
    let mut lead = lead.unwrap_or_else(|| {
        let new = new.expect("a new lead comes with its fields");
        Lead {
            site_id: site.site_id.clone(),
            lead_key: lead_key.to_owned(),
            lead_id: uuid::Uuid::new_v4().to_string(),
            origin: new.origin.clone(),
            ad_id: new.ad_id.clone(),
            label: new.label.clone(),
            column: None,
            stage: Stage::Open,
            revenue_cents: None,
            created_at: change.occurred_at,
            cohort_day: utc_day(change.occurred_at),
            last_move_at: change.occurred_at,
            conversions: Default::default(),
            entries: vec![],
            version: 0,
        }
    });
    let mut changed = is_new;
    if let (false, Some(new)) = (is_new, new) {
        // The host records a lead it already sent: its label may change
        // (its origin and ad stay: the lead counts under them).
        if new.label.is_some() && new.label != lead.label {
            lead.label = new.label.clone();
            changed = true;
        }
    }
    if let Some(stage) = applied.stage
        && stage != lead.stage
    {
        lead.stage = stage;
        changed = true;
    }
    if let Some(cents) = change.revenue_cents
        && Some(cents) != lead.revenue_cents
    {
        lead.revenue_cents = Some(cents);
        changed = true;
    }
    if let Some(col) = &applied.entered {
        lead.column = Some(col.clone());
        let day = utc_day(now);
        // Entries count for 30 days: older ones leave the lead's list (their
        // items expire by themselves), so the list stays bounded.
        lead.entries
            .retain(|(_, d)| *d + adtrail_store::leads::ENTRY_KEPT_MS > day);
        if !lead.entries.iter().any(|(c, d)| c == col && *d == day) {
            lead.entries.push((col.clone(), day));
        }
        changed = true;
    }
    let events = events_for(&applied, is_new, pixel, change.hashes.is_some(), &board.map);
    if !changed && events.is_empty() {
        return None;
    }
    lead.last_move_at = lead.last_move_at.max(change.occurred_at);
    let hashes = change.hashes.clone();
    let conversions = events
        .into_iter()
        .filter_map(|event| {
            let hashes = hashes.clone()?;
            let id = event_id(&lead.lead_id, event);
            Some(NewConversion {
                sk: lead
                    .conversions
                    .get(&event)
                    .cloned()
                    .unwrap_or_else(|| new_conversion_sk(now, &id)),
                event_id: id,
                event_name: event,
                event_time: change.occurred_at,
                value_cents: (event == EventName::Purchase)
                    .then_some(applied.sale_cents)
                    .flatten(),
                currency: (event == EventName::Purchase).then(|| site.currency.clone()),
                hashes,
                reopens: None,
            })
        })
        .collect();
    // The lead's cohort counters move with its stage and its sale.
    let rollup = Counters::delta(
        before,
        Some(Counters::of_lead(lead.stage, lead.revenue_cents)),
    );
    Some(LeadWrite {
        lead,
        change_id: change.change_id.clone(),
        entered: applied.entered,
        conversions,
        rollup,
        now,
    })
}

/// Once per lead per event: an event queued or sent before is dropped; one
/// that failed for good is opened again.
async fn reopen_or_skip(api: &Api, mut plan: LeadWrite) -> Result<LeadWrite, ApiError> {
    let known: Vec<String> = plan
        .conversions
        .iter()
        .filter(|c| plan.lead.conversions.contains_key(&c.event_name))
        .map(|c| c.sk.clone())
        .collect();
    let existing = if known.is_empty() {
        vec![]
    } else {
        api.aws.get_conversions(&plan.lead.site_id, &known).await?
    };
    plan.conversions
        .retain_mut(|c| match existing.iter().find(|e| e.sk == c.sk) {
            None => true,
            Some(e) if e.status == ConversionStatus::Failed => {
                c.reopens = Some(ConversionStatus::Failed);
                true
            }
            Some(_) => false,
        });
    for c in &plan.conversions {
        plan.lead.conversions.insert(c.event_name, c.sk.clone());
    }
    Ok(plan)
}

/// Puts the new conversions' messages on the send queue. A failure here
/// loses nothing: the rows are pending, and the sweeper sends them.
async fn enqueue(api: &Api, site: &str, conversions: &[NewConversion]) {
    if conversions.is_empty() {
        return;
    }
    let messages: Vec<SendMessage> = conversions
        .iter()
        .map(|c| SendMessage {
            site_id: site.to_owned(),
            key: c.sk.clone(),
        })
        .collect();
    match api.aws.enqueue_sends(&messages).await {
        Ok(0) => {}
        Ok(refused) => tracing::warn!(refused, "SQS refused sends; the sweeper will send them"),
        Err(error) => {
            tracing::warn!(error = %error, "could not queue sends; the sweeper will send them")
        }
    }
}

fn answer(
    site: &str,
    lead_key: &str,
    lead: Option<&Lead>,
    changed: bool,
    queued: &[&str],
    change: &Change,
) -> Value {
    let mut v = json!({
        "siteId": site,
        "leadKey": lead_key,
        "changeId": change.change_id,
        "changed": changed,
        "queued": queued,
    });
    if let Some(l) = lead {
        v["leadId"] = json!(l.lead_id);
        v["column"] = json!(l.column);
        v["stage"] = json!(l.stage.as_str());
    }
    if let Some(w) = &change.meta_warning {
        v["warnings"] = json!([w]);
    }
    v
}
