//! The board and the event map:
//! `PUT /v1/sites/{siteId}/pipeline` (the host declares its columns, in
//! order), `PUT /v1/sites/{siteId}/event-map` (which Meta event each column
//! sends) and `GET /v1/sites/{siteId}/event-map?now=` (the map with how many
//! leads entered each column in the 30 UTC days up to `now`).

use std::collections::BTreeMap;

use adtrail_domain::SiteId;
use adtrail_domain::board::{BoardError, Column, check_board, keep_mapped};
use adtrail_domain::capi::EventName;
use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::time::DAY_MS;
use adtrail_domain::time::utc_day;
use adtrail_store::StoreError;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{json_body, millis, query};
use crate::views::BoardView;
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PipelineBody {
    columns: Vec<ColumnBody>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ColumnBody {
    key: String,
    name: String,
    group: Option<String>,
    color: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventMapBody {
    columns: BTreeMap<String, Option<String>>,
    send_lead_event: Option<bool>,
    /// The host may act for an owner (a dashboard always acts as itself).
    owner_key: Option<String>,
}

/// A write that lost a race with another write of the same board.
fn board_conflict(e: StoreError) -> ApiError {
    match e {
        StoreError::Condition(_) => ApiError::new(
            ErrorCode::Conflict,
            "the board changed while this was saved; read it and try again",
        ),
        other => other.into(),
    }
}

async fn require_site(api: &Api, site: &SiteId) -> Result<(), ApiError> {
    match api.store.sites().get_site(site.as_str()).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::no_site()),
    }
}

pub(crate) async fn put_pipeline(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    caller.require_host()?;
    let site = SiteId::parse("siteId", site)?;
    let body: PipelineBody = json_body(req)?;
    let columns: Vec<Column> = body
        .columns
        .into_iter()
        .map(|c| Column {
            key: c.key,
            name: c.name.trim().to_owned(),
            group: c.group.map(|g| g.trim().to_owned()),
            color: c.color,
        })
        .collect();
    check_board(&columns).map_err(|e| match e {
        BoardError::TooMany => ApiError::new(ErrorCode::LimitExceeded, e.to_string()),
        BoardError::Invalid(m) => ApiError::invalid(m),
    })?;
    require_site(api, &site).await?;
    let mut board = api.store.boards().get_board(site.as_str()).await?;
    board.map = keep_mapped(&board.map, &columns);
    board.columns = Some(columns);
    api.store
        .boards()
        .put_board(site.as_str(), &board, api.clock.now_ms())
        .await
        .map_err(board_conflict)?;
    json(200, &BoardView::of(site.as_str(), &board, None, None))
}

pub(crate) async fn put_event_map(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let body: EventMapBody = json_body(req)?;
    caller.may_configure(site.as_str())?;
    let acting = crate::auth::acting_owner(caller, body.owner_key.as_ref())?;
    require_site(api, &site).await?;
    let mut board = api.store.boards().get_board(site.as_str()).await?;
    let mut map = BTreeMap::new();
    for (key, event) in &body.columns {
        if !board.declares(key) {
            return Err(ApiError::invalid(format!(
                "columns.{}: the board does not declare this column",
                printable(key)
            )));
        }
        if let Some(name) = event {
            let event = EventName::parse_column_event(name).ok_or_else(|| {
                ApiError::invalid(format!(
                    "columns.{key}: must be Lead, QualifiedLead, Schedule or null"
                ))
            })?;
            map.insert(key.clone(), event);
        }
    }
    let pixel = api.store.pixels().get_pixel(site.as_str()).await?;
    // Whoever set the pixel decides which columns reach it.
    if let (Some(owner), Some(p)) = (&acting, &pixel)
        && p.owner() != Some(owner.as_str())
    {
        return Err(ApiError::new(
            ErrorCode::Conflict,
            "the site's pixel was set by another owner, who decides its events",
        ));
    }
    board.map = map;
    if let Some(on) = body.send_lead_event {
        board.send_lead_event = on;
    }
    api.store
        .boards()
        .put_board(site.as_str(), &board, api.clock.now_ms())
        .await
        .map_err(board_conflict)?;
    if pixel.is_some() {
        // `sendLeadEvent` is kept on the pixel too: that is what sends.
        api.store
            .pixels()
            .set_pixel_send_lead_event(site.as_str(), board.send_lead_event)
            .await?;
    }
    let enabled = pixel
        .as_ref()
        .is_some_and(|p| p.enabled && !p.stopped && !p.not_granted);
    json(
        200,
        &BoardView::of(site.as_str(), &board, None, Some(enabled)),
    )
}

pub(crate) async fn get_event_map(
    api: &Api,
    caller: &Caller,
    req: &Request,
    site: &str,
) -> Result<Response<Body>, ApiError> {
    let site = SiteId::parse("siteId", site)?;
    let params = query(req, &["now"])?;
    let now = millis(&params, "now")?;
    caller.may_read(site.as_str())?;
    require_site(api, &site).await?;
    let board = api.store.boards().get_board(site.as_str()).await?;
    let pixel = api.store.pixels().get_pixel(site.as_str()).await?;
    let counts = match (now, &board.columns) {
        (Some(now), Some(columns)) => {
            let keys: Vec<String> = columns.iter().map(|c| c.key.clone()).collect();
            let to = utc_day(now);
            Some(
                api.store
                    .leads()
                    .column_counts(site.as_str(), &keys, to - 29 * DAY_MS, to)
                    .await?,
            )
        }
        _ => None,
    };
    let mut view = BoardView::of(
        site.as_str(),
        &board,
        counts.as_ref(),
        Some(
            pixel
                .as_ref()
                .is_some_and(|p| p.enabled && !p.stopped && !p.not_granted),
        ),
    );
    if let Some(p) = &pixel {
        // The pixel's setting is what sends.
        view.send_lead_event = p.send_lead_event;
    }
    json(200, &view)
}

/// A key echoed in an error: only its safe characters, bounded.
fn printable(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
        .take(128)
        .collect()
}
