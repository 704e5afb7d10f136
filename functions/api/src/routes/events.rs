//! `POST /v1/sites/{siteId}/events`: a storefront's or backend's
//! conversions, up to 100 a request. Each event fans out to every
//! destination of the site that sends it (the pixel as `meta`), once per
//! (destination, `eventId`): the contact, plain over TLS, is reduced to
//! each platform's own hashes before anything is written, and a replayed
//! batch queues nothing new and says so per event.

use std::collections::{BTreeMap, HashSet};

use adtrail_domain::SiteId;
use adtrail_domain::capi::{EventName, max_event_age_ms, too_old};
use adtrail_domain::destinations::PIXEL_SLUG;
use adtrail_domain::events::{ActionSource, EventRow, MAX_EVENTS_PER_POST, PostedEvent};
use adtrail_domain::identifiers::Platform;
use adtrail_domain::ids::{check_opaque, is_hidden};
use adtrail_domain::money::Currency;
use adtrail_domain::time::{DAY_MS, MINUTE_MS};
use adtrail_store::posted::Posted;
use adtrail_store::queue::SendMessage;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::contact::{ContactBody, read_contact};
use crate::error::ApiError;
use crate::input::json_body;
use crate::views::{PostedEventView, PostedView};
use crate::{Api, json};
use adtrail_changes::{Targets, targets};

/// How far ahead of our clock an event may be (clock skew).
const MAX_FUTURE_MS: i64 = 5 * MINUTE_MS;
/// The oldest event taken: past any platform's window (Meta's 62 days
/// for a physical store); each platform's own limit is judged at the send.
const MAX_AGE_MS: i64 = 90 * DAY_MS;
/// The largest value: ten trillion minor units.
const MAX_VALUE_CENTS: i64 = 10_000_000_000_000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventsBody {
    events: Vec<EventBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventBody {
    event_id: String,
    event: String,
    #[serde(deserialize_with = "crate::input::whole_number")]
    occurred_at: i64,
    action_source: String,
    event_source_url: Option<String>,
    #[serde(default, deserialize_with = "crate::input::optional_whole_number")]
    value_cents: Option<i64>,
    currency: Option<String>,
    order_id: Option<String>,
    #[serde(default)]
    contact: ContactBody,
}

/// A page address: http(s), at most 2,048 characters, nothing hidden or
/// blank.
fn check_url(field: &str, url: &str) -> Result<(), ApiError> {
    let scheme = url.starts_with("https://") || url.starts_with("http://");
    if !scheme || url.len() > 2048 || url.chars().any(|c| is_hidden(c) || c.is_whitespace()) {
        return Err(ApiError::invalid(format!(
            "{field}: must be an http(s) address of at most 2048 characters"
        )));
    }
    Ok(())
}

/// One event's checks; `i` names it (`events[3].eventId`). Answers the
/// event and the warnings of the contact fields it dropped.
fn check_event(i: usize, b: EventBody, now: i64) -> Result<(PostedEvent, Vec<String>), ApiError> {
    let field = |name: &str| format!("events[{i}].{name}");
    check_opaque(&field("eventId"), &b.event_id)?;
    let event = EventName::parse_wire(&b.event).ok_or_else(|| {
        ApiError::invalid(format!(
            "{}: must be one of {}",
            field("event"),
            EventName::ALL.map(EventName::wire).join(", ")
        ))
    })?;
    if b.occurred_at > now + MAX_FUTURE_MS || b.occurred_at < now - MAX_AGE_MS {
        return Err(ApiError::invalid(format!(
            "{}: must be epoch milliseconds within the last 90 days, not in the future",
            field("occurredAt")
        )));
    }
    let action_source = ActionSource::parse(&b.action_source).ok_or_else(|| {
        ApiError::invalid(format!(
            "{}: must be one of {}",
            field("actionSource"),
            ActionSource::ALL.map(ActionSource::as_str).join(", ")
        ))
    })?;
    match &b.event_source_url {
        Some(url) => check_url(&field("eventSourceUrl"), url)?,
        None if action_source.needs_source_url() => {
            return Err(ApiError::invalid(format!(
                "{}: is required for website events",
                field("eventSourceUrl")
            )));
        }
        None => {}
    }
    let currency = match (b.value_cents, &b.currency) {
        (None, None) if event == EventName::Purchase => {
            return Err(ApiError::invalid(format!(
                "{}: a purchase needs valueCents and currency",
                field("valueCents")
            )));
        }
        (None, None) => None,
        (Some(v), Some(c)) => {
            if !(0..=MAX_VALUE_CENTS).contains(&v) {
                return Err(ApiError::invalid(format!(
                    "{}: must be 0 to {MAX_VALUE_CENTS}",
                    field("valueCents")
                )));
            }
            Currency::parse(c).map_err(|_| {
                ApiError::invalid(format!("{}: must be an ISO 4217 code", field("currency")))
            })?;
            Some(c.clone())
        }
        _ => {
            return Err(ApiError::invalid(format!(
                "{}: valueCents and currency go together",
                field("currency")
            )));
        }
    };
    if let Some(order) = &b.order_id {
        check_opaque(&field("orderId"), order)?;
    }
    let (contact, warnings) = read_contact(b.contact, &format!("events[{i}]."));
    Ok((
        PostedEvent {
            event_id: b.event_id,
            event,
            occurred_at: b.occurred_at,
            action_source,
            source_url: b.event_source_url,
            value_cents: b.value_cents,
            currency,
            order_id: b.order_id,
            contact,
        },
        warnings,
    ))
}

/// The rows of `event`: one per target that sends it, gets something to
/// match a person on and still takes an event this old (the pixel as
/// `meta`); a warning names each destination left out, and why.
fn rows_of(
    targets: &Targets,
    i: usize,
    event: &PostedEvent,
    country: Option<&str>,
    now: i64,
    warnings: &mut Vec<String>,
) -> Vec<EventRow> {
    let pixel = targets
        .pixel
        .map(|_| EventRow::of(event, PIXEL_SLUG, None, Platform::Meta, country, now));
    let destinations = targets
        .destinations
        .iter()
        .filter(|d| d.account.sends(event.event))
        .map(|d| {
            let platform = d.account.platform();
            EventRow::of(event, &d.slug, Some(&d.slug), platform, country, now)
        });
    pixel
        .into_iter()
        .chain(destinations)
        .filter(|row| {
            let max_age = max_event_age_ms(row.platform, Some(row.action_source));
            let why = if row.hashes.is_empty() {
                format!(
                    "events[{i}].contact: nothing {} can match a person on",
                    row.slug
                )
            } else if too_old(row.event_time, max_age, now) {
                format!(
                    "events[{i}].occurredAt: older than {} days, the most {} takes",
                    max_age / DAY_MS,
                    row.platform.label()
                )
            } else {
                return true;
            };
            warnings.push(format!("{why}; not sent to {}", row.slug));
            false
        })
        .collect()
}

/// Every event of a request checked, each with its warnings: the first
/// bad one (or an id repeated within the request) fails them all.
fn check_events(body: EventsBody, now: i64) -> Result<Vec<(PostedEvent, Vec<String>)>, ApiError> {
    if body.events.is_empty() || body.events.len() > MAX_EVENTS_PER_POST {
        return Err(ApiError::invalid(format!(
            "events: must hold 1 to {MAX_EVENTS_PER_POST} events"
        )));
    }
    let mut events = vec![];
    let mut ids = HashSet::new();
    for (i, b) in body.events.into_iter().enumerate() {
        if !ids.insert(b.event_id.clone()) {
            return Err(ApiError::invalid(format!(
                "events[{i}].eventId: repeats an event of this request"
            )));
        }
        events.push(check_event(i, b, now)?);
    }
    Ok(events)
}

pub(crate) async fn post_events(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let body: EventsBody = json_body(req)?;
    caller.require_host()?;
    let now = api.clock.now_ms();
    let mut events = check_events(body, now)?;
    // The site and where its events go, read at once: a site that does
    // not exist has no pixel or destinations either, so nothing is lost.
    let sites = api.store.sites();
    let (site_row, targets) = futures::try_join!(
        sites.get_site(site.as_str()),
        targets(&api.store, site.as_str())
    )?;
    let Some(site_row) = site_row else {
        return Err(ApiError::no_site());
    };
    let country = site_row.country.as_deref();
    // Each event's rows, and which event each row is of.
    let mut rows = vec![];
    let mut of_event = vec![];
    let mut warned: Vec<Vec<String>> = vec![];
    for (i, (event, warnings)) in events.iter_mut().enumerate() {
        if event.contact.has_identity() {
            for row in rows_of(&targets, i, event, country, now, warnings) {
                rows.push(row);
                of_event.push(i);
            }
        } else {
            warnings.push(format!(
                "events[{i}].contact: nothing left to match a person on; not queued"
            ));
        }
        warned.push(std::mem::take(warnings));
    }
    let posted = api
        .store
        .conversions()
        .queue_posted(site.as_str(), &rows, now)
        .await?;
    let mut queued: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut duplicate: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    let mut messages = vec![];
    let mut again = vec![];
    for ((row, event), outcome) in rows.iter().zip(&of_event).zip(&posted) {
        match outcome {
            Posted::Queued(key) => {
                queued.entry(*event).or_default().push(&row.slug);
                messages.push(SendMessage {
                    site_id: site.to_string(),
                    key: key.clone(),
                });
            }
            Posted::Duplicate => duplicate.entry(*event).or_default().push(&row.slug),
            Posted::Unsent(key) => {
                duplicate.entry(*event).or_default().push(&row.slug);
                again.push(SendMessage {
                    site_id: site.to_string(),
                    key: key.clone(),
                });
            }
        }
    }
    let queued_now = messages.len();
    messages.extend(again);
    adtrail_changes::enqueue(&api.store, &messages).await;
    let answers = events
        .iter()
        .zip(warned)
        .enumerate()
        .map(|(i, ((event, _), warnings))| PostedEventView {
            event_id: &event.event_id,
            warnings,
            queued: queued.remove(&i).unwrap_or_default(),
            duplicate: duplicate.remove(&i).unwrap_or_default(),
        })
        .collect();
    json(
        202,
        &PostedView {
            site_id: site.as_str(),
            queued: queued_now,
            events: answers,
        },
    )
}
