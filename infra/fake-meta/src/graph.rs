//! The Graph endpoints the fake serves from its sample agency: `/me`, ad
//! accounts and their pixels, insights (with Meta's "reduce the amount of
//! data"), ads with their creatives, thumbnails, and the Conversions API's
//! `POST /{pixel}/events`.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde_json::{Value, json};

use crate::agency::{
    ME_ID, ME_NAME, SAMPLE_PAGES, SampleAccount, ad_day, decimal, page_token, refreshes, wide_ads,
};
use crate::knobs::Knobs;
use crate::server::Shared;
use crate::wire::{bad_param, meta_error, no_object, page_size, paged};

pub(crate) const INSIGHT_FIELDS: [&str; 13] = [
    "ad_id",
    "ad_name",
    "adset_id",
    "adset_name",
    "campaign_id",
    "campaign_name",
    "spend",
    "impressions",
    "clicks",
    "date_start",
    "date_stop",
    "account_id",
    "account_currency",
];

pub(crate) fn post_events(shared: &Shared, pixel: &str, body: &[u8], knobs: &Knobs) -> Response {
    let known = shared
        .accounts
        .iter()
        .flat_map(|a| a.pixels.iter())
        .any(|(p, _)| *p == pixel);
    if !known {
        return no_object(
            "Unsupported post request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation",
        );
    }
    if knobs.deny_events {
        return meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) The access token may not send events to this dataset",
            false,
        );
    }
    match crate::capi::check_request(pixel, body, shared.clock.now_ms(), &knobs.reject_event_ids) {
        Ok(events) => {
            let mut inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
            let mut received = events.len();
            if inner.knobs.short_receipts > 0 {
                inner.knobs.short_receipts -= 1;
                received = received.saturating_sub(1);
            }
            inner.accepted.extend(events);
            Json(json!({"events_received": received, "messages": [], "fbtrace_id": "AfakeTrace"}))
                .into_response()
        }
        Err(message) => meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(2_804_008),
            message,
            false,
        ),
    }
}

/// The id of the big agency's `i`-th extra account.
fn extra_account(i: usize) -> String {
    format!("act_8{i:09}")
}

/// Which extra account `act` is, if it is one the knobs list.
fn extra_index(act: &str, knobs: &Knobs) -> Option<usize> {
    let i: usize = act.strip_prefix("act_8")?.parse().ok()?;
    (i < knobs.extra_accounts && act == extra_account(i)).then_some(i)
}

pub(crate) fn account<'a>(shared: &'a Shared, id: &str) -> Option<&'a SampleAccount> {
    shared.accounts.iter().find(|a| a.id == id)
}

/// A sample account, or one of the big agency's extra accounts: those run
/// no ads, so Meta lists nothing in their insights and ads (an account
/// whose campaigns are all off answers `{"data": []}`, not an error).
fn account_or_extra<'a>(
    shared: &'a Shared,
    id: &str,
    knobs: &Knobs,
) -> Option<std::borrow::Cow<'a, SampleAccount>> {
    if let Some(acc) = account(shared, id) {
        return Some(std::borrow::Cow::Borrowed(acc));
    }
    extra_index(id, knobs)?;
    Some(std::borrow::Cow::Owned(SampleAccount {
        id: id.to_owned(),
        name: "Agency account",
        currency: "BRL",
        timezone: "America/Sao_Paulo",
        ads: vec![],
        pixels: vec![],
    }))
}

pub(crate) fn graph_get(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        ["me"] => Json(json!({"id": ME_ID, "name": ME_NAME})).into_response(),
        ["me", "adaccounts"] => ad_accounts(shared, rest, query, knobs, token),
        ["me", "accounts"] => pages_listing(shared, rest, query, knobs, token),
        [act, "adspixels"] if extra_index(act, knobs).is_some() => {
            let i = extra_index(act, knobs).unwrap_or_default();
            let items = if i < knobs.pixel_accounts {
                vec![json!({"id": format!("12{i:014}"), "name": format!("Agency pixel {i}")})]
            } else {
                vec![]
            };
            paged(shared, rest, query, items, 25, token)
        }
        [_, "insights" | "ads"] if knobs.deny_permission => meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) Ad account owner has NOT grant ads_management or ads_read permission",
            false,
        ),
        [act, "insights"] => match account_or_extra(shared, act, knobs) {
            Some(acc) => insights(shared, rest, &acc, query, knobs, token),
            None => no_object(
                "Unsupported get request. Object does not exist or cannot be loaded due to missing permissions",
            ),
        },
        [act, "adspixels"] if knobs.deny_pixels.iter().any(|d| d == act) => meta_error(
            StatusCode::FORBIDDEN,
            200,
            None,
            "(#200) Missing permissions to read the ad account's pixels",
            false,
        ),
        [act, "adspixels"] => account_pixels(shared, rest, act, query, knobs, token),
        [id] if id.bytes().all(|b| b.is_ascii_digit()) => pixel_by_id(shared, id),
        [act, "ads"] => match account_or_extra(shared, act, knobs) {
            Some(acc) => ads(shared, rest, &acc, query, knobs, token),
            None => no_object("Unsupported get request. Object does not exist"),
        },
        _ => no_object("Unsupported get request"),
    }
}

/// `GET /me/adaccounts`: the sample agency's accounts and the knobs' extra ones.
fn ad_accounts(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mut items: Vec<Value> = shared
        .accounts
        .iter()
        .map(|a| json!({"id": a.id, "account_id": &a.id[4..], "name": a.name, "currency": a.currency, "timezone_name": a.timezone}))
        .collect();
    items.extend((0..knobs.extra_accounts).map(|i| {
        let id = extra_account(i);
        json!({"id": id, "account_id": &id[4..], "name": format!("Agency account {i}"), "currency": "BRL", "timezone_name": "America/Sao_Paulo"})
    }));
    paged(shared, rest, query, items, size, token)
}

/// `GET /me/accounts`: the user's Pages with their tasks and Page tokens.
fn pages_listing(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let items: Vec<Value> = SAMPLE_PAGES
        .iter()
        .map(|(id, name, tasks)| {
            json!({"id": id, "name": name, "tasks": tasks, "category": "Shopping & retail",
                   "access_token": page_token(id)})
        })
        .collect();
    paged(shared, rest, query, items, size, token)
}

/// `GET /{act}/adspixels`: an account's pixels (`fields` required).
fn account_pixels(
    shared: &Shared,
    rest: &str,
    act: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    match account(shared, act) {
        Some(acc) if query.contains_key("fields") => {
            let size = match page_size(query, knobs, 25) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let items = acc
                .pixels
                .iter()
                .map(|(id, name)| json!({"id": id, "name": name}))
                .collect();
            paged(shared, rest, query, items, size, token)
        }
        Some(_) => bad_param("Invalid parameter: fields"),
        None => no_object("Unsupported get request. Object does not exist"),
    }
}

/// `GET /{pixel}`: one pixel of any sample account.
fn pixel_by_id(shared: &Shared, id: &str) -> Response {
    match shared
        .accounts
        .iter()
        .flat_map(|a| a.pixels.iter())
        .find(|(p, _)| *p == id)
    {
        Some((id, name)) => Json(json!({"id": id, "name": name})).into_response(),
        None => no_object(
            "Unsupported get request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation",
        ),
    }
}

pub(crate) fn insights(
    shared: &Shared,
    path: &str,
    acc: &SampleAccount,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    if query.get("level").map(String::as_str) != Some("ad") {
        return bad_param("Invalid parameter: level must be one of ad, adset, campaign, account");
    }
    if query.get("time_increment").map(String::as_str) != Some("1") {
        return bad_param("Invalid parameter: time_increment");
    }
    let Some(fields) = query.get("fields") else {
        return bad_param("Invalid parameter: fields");
    };
    if fields.split(',').any(|f| !INSIGHT_FIELDS.contains(&f)) {
        return bad_param("Invalid parameter: fields contains an unknown field");
    }
    let range = query
        .get("time_range")
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|v| {
            let d = |k: &str| {
                v.get(k)?
                    .as_str()
                    .and_then(|s| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok())
            };
            Some((d("since")?, d("until")?))
        });
    let Some((since, until)) = range.filter(|(s, u)| s <= u && (*u - *s).num_days() < 400) else {
        return bad_param(
            "Invalid parameter: time_range must be {\"since\":\"YYYY-MM-DD\",\"until\":\"YYYY-MM-DD\"}",
        );
    };
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let mut rows = vec![];
    let mut date = since;
    let now = shared.clock.now_ms();
    let wide = wide_ads(acc, knobs.wide_ads);
    while date <= until {
        let refreshes = refreshes(acc.timezone, date, now);
        for ad in acc
            .ads
            .iter()
            .chain(&wide)
            .filter(|a| !knobs.archived_ads.contains(&a.id))
        {
            if let Some((spend, impressions, clicks)) = ad_day(&ad.id, date, refreshes) {
                rows.push(json!({
                    "ad_id": ad.id, "ad_name": ad.name, "adset_id": ad.adset_id, "adset_name": ad.adset_name,
                    "campaign_id": ad.campaign_id, "campaign_name": ad.campaign_name,
                    "spend": decimal(spend), "impressions": impressions.to_string(), "clicks": clicks.to_string(),
                    "date_start": date.to_string(), "date_stop": date.to_string(),
                }));
            }
        }
        date = date.succ_opt().expect("date");
    }
    if knobs.row_cap.is_some_and(|cap| rows.len() > cap) {
        return meta_error(
            StatusCode::BAD_REQUEST,
            100,
            Some(1_487_534),
            "Please reduce the amount of data you're asking for, then retry your request",
            false,
        );
    }
    paged(shared, path, query, rows, size, token)
}

pub(crate) fn ads(
    shared: &Shared,
    path: &str,
    acc: &SampleAccount,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Response {
    if !query.contains_key("fields") {
        return bad_param("Invalid parameter: fields");
    }
    let only: Option<Vec<String>> = match query.get("filtering") {
        None => None,
        Some(f) => match serde_json::from_str::<Value>(f).ok().and_then(|v| {
            let rule = v.as_array()?.first()?.clone();
            (rule.get("field")?.as_str()? == "id" && rule.get("operator")?.as_str()? == "IN")
                .then_some(())?;
            Some(
                rule.get("value")?
                    .as_array()?
                    .iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect(),
            )
        }) {
            Some(ids) => Some(ids),
            None => return bad_param("Invalid parameter: filtering"),
        },
    };
    let size = match page_size(query, knobs, 25) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if knobs.ads_limit_cap.is_some_and(|cap| size > cap) {
        return meta_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            1,
            Some(99),
            "Please reduce the amount of data you're asking for, then retry your request",
            false,
        );
    }
    let items = acc
        .ads
        .iter()
        .filter(|ad| match &only {
            Some(ids) => ids.contains(&ad.id),
            // An archived ad comes back only when asked for by id.
            None => !knobs.archived_ads.contains(&ad.id),
        })
        .map(|ad| {
            let mut spec = json!({"page_id": "100000000000002"});
            if ad.carousel {
                spec["link_data"] = json!({"child_attachments": [{"name": "1"}, {"name": "2"}, {"name": "3"}]});
            } else if ad.object_type == "VIDEO" {
                spec["video_data"] = json!({"video_id": "1"});
            }
            json!({
                "id": ad.id, "name": ad.name, "effective_status": ad.status,
                "adset": {"id": ad.adset_id, "name": ad.adset_name},
                "campaign": {"id": ad.campaign_id, "name": ad.campaign_name},
                "creative": {"id": format!("9{}", ad.id), "object_type": ad.object_type,
                    "thumbnail_url": format!("{}/thumbs/{}.png", shared.base_url, ad.id), "object_story_spec": spec},
            })
        })
        .collect();
    paged(shared, path, query, items, size, token)
}

/// A valid 1×1 PNG.
pub(crate) const PNG_1X1: [u8; 67] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0a, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

/// An ad's thumbnail on the fake's CDN (`/thumbs/{ad}.png`).
pub(crate) fn thumbnail(path: &str) -> Option<Response> {
    let ad = path.strip_prefix("/thumbs/")?.strip_suffix(".png")?;
    Some(if ad.bytes().all(|b| b.is_ascii_digit()) {
        ([("content-type", "image/png")], PNG_1X1.to_vec()).into_response()
    } else {
        StatusCode::NOT_FOUND.into_response()
    })
}
