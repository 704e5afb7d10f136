//! Routing: how a request finds its route in the table (`table.rs`,
//! [`ROUTES`]), its dispatch, and the `404`/`405` answers of other paths.

mod board;
mod connections;
mod conversions;
mod destinations;
mod events;
mod form_leads;
mod forms;
mod forms_report;
mod forward;
mod leads;
mod leads_report;
mod links;
mod login;
mod pages;
mod pixels;
mod reads;
mod reports;
mod sites;
mod webhooks;

use lambda_http::{Body, Request, Response};

use crate::Api;
use crate::auth::Caller;
use crate::error::ApiError;

mod table;
use table::Op;
pub use table::{ROUTES, Route};

/// A request's path, each segment decoded on its own (`%3A` is `:`) after
/// the split, so an encoded `/` never makes a segment. Undecodable bytes
/// stay encoded and fail the id's check.
pub(crate) fn segments(path: &str) -> Vec<std::borrow::Cow<'_, str>> {
    path.trim_matches('/')
        .split('/')
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .unwrap_or(std::borrow::Cow::Borrowed(s))
        })
        .collect()
}

/// Whether a route's path has the shape of `segments`: its ids, in order.
fn ids<'a>(route: &Route, segments: &[&'a str]) -> Option<Vec<&'a str>> {
    let parts: Vec<&str> = route.path.trim_matches('/').split('/').collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut ids = vec![];
    for (part, seg) in parts.iter().zip(segments) {
        if part.starts_with('{') {
            ids.push(*seg);
        } else if part != seg {
            return None;
        }
    }
    Some(ids)
}

/// The route a request takes, if any.
pub(crate) fn find(method: &str, segments: &[&str]) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.method == method && ids(r, segments).is_some())
}

/// Answers a request: its route's handler, or `404`/`405`.
pub(crate) async fn route(
    api: &Api,
    caller: &Caller,
    req: &Request,
    method: &str,
    segments: &[&str],
) -> Result<Response<Body>, ApiError> {
    match find(method, segments) {
        Some(route) => {
            let ids = ids(route, segments).unwrap_or_default();
            dispatch(api, caller, req, route.op, &ids).await
        }
        None => {
            let allow = allowed_methods(segments);
            if allow.is_empty() {
                Err(ApiError::not_found("no such route"))
            } else {
                Ok(method_not_allowed(method, &allow))
            }
        }
    }
}

async fn dispatch(
    api: &Api,
    caller: &Caller,
    req: &Request,
    op: Op,
    ids: &[&str],
) -> Result<Response<Body>, ApiError> {
    let id = |i: usize| ids.get(i).copied().unwrap_or_default();
    // A token made to forward one lead opens that route alone.
    if caller.forwards.is_some() && op != Op::ForwardLeadgen {
        return Err(ApiError::forbidden(
            "a meta_leadgen token opens only POST /v1/meta/leadgen",
        ));
    }
    match op {
        Op::PutSite => sites::put_site(api, caller, req, id(0)).await,
        Op::ListSites => sites::list_sites(api, caller, req).await,
        Op::GetSite => sites::get_site(api, caller, id(0)).await,
        Op::DeleteSite => sites::delete_site(api, caller, id(0)).await,
        Op::PutConnection => connections::put_connection(api, caller, req, id(0)).await,
        Op::GetConnection => connections::get_connection(api, caller, id(0)).await,
        Op::DeleteConnection => connections::delete_connection(api, caller, id(0)).await,
        Op::Login => login::login(api, caller, req, id(0)).await,
        Op::Refresh => connections::refresh_connection(api, caller, id(0)).await,
        Op::ListPages => connections::pages(api, caller, id(0)).await,
        Op::LinkPage => pages::link_page(api, caller, req, id(0), id(1)).await,
        Op::UnlinkPage => pages::unlink_page(api, caller, req, id(0), id(1)).await,
        Op::Link => links::link(api, caller, req, id(0), id(1)).await,
        Op::Unlink => links::unlink(api, caller, req, id(0), id(1)).await,
        Op::UnlinkPreview => links::unlink_preview(api, caller, id(0), id(1)).await,
        Op::SyncNow => links::sync_now(api, caller, id(0)).await,
        Op::PutPixel => pixels::put_pixel(api, caller, req, id(0)).await,
        Op::DeletePixel => pixels::delete_pixel(api, caller, req, id(0)).await,
        Op::PutDestination => destinations::put_destination(api, caller, req, id(0), id(1)).await,
        Op::GetDestination => destinations::get_destination(api, caller, id(0), id(1)).await,
        Op::ListDestinations => destinations::list_destinations(api, caller, id(0)).await,
        Op::DeleteDestination => {
            destinations::delete_destination(api, caller, req, id(0), id(1)).await
        }
        Op::PutPipeline => board::put_pipeline(api, caller, req, id(0)).await,
        Op::PutEventMap => board::put_event_map(api, caller, req, id(0)).await,
        Op::GetEventMap => board::get_event_map(api, caller, req, id(0)).await,
        Op::PostEvents => events::post_events(api, caller, req, id(0)).await,
        Op::RecordLead => leads::record_lead(api, caller, req, id(0)).await,
        Op::MoveLead => leads::move_lead(api, caller, req, id(0), id(1)).await,
        Op::DeleteLead => leads::delete_lead(api, caller, id(0), id(1)).await,
        Op::ListConversions => conversions::list(api, caller, req, id(0)).await,
        Op::LeadConversions => conversions::of_lead(api, caller, id(0), id(1)).await,
        Op::DestinationMetrics => {
            destinations::destination_metrics(api, caller, req, id(0), id(1)).await
        }
        Op::Spend => reads::spend(api, caller, req, id(0)).await,
        Op::Status => reads::status(api, caller, req).await,
        Op::DailyReport => reports::daily(api, caller, req).await,
        Op::LeadsReport => leads_report::leads(api, caller, req).await,
        Op::ForwardLeadgen => forward::forward_leadgen(api, caller, req).await,
        Op::ListForms => forms::page_forms(api, caller, id(0), id(1), false).await,
        Op::RefreshForms => forms::page_forms(api, caller, id(0), id(1), true).await,
        Op::GetFormRules => forms::get_rules(api, caller, id(0), id(1)).await,
        Op::PutFormRules => forms::put_rules(api, caller, req, id(0), id(1)).await,
        Op::SimulateFormRules => forms::simulate(api, caller, req, id(0), id(1)).await,
        Op::ListFormLeads => form_leads::list(api, caller, req, id(0)).await,
        Op::FormsReport => forms_report::forms(api, caller, req).await,
        Op::ReadFormLead => form_leads::read(api, caller, id(0), id(1)).await,
        Op::ReturnFormLead => form_leads::return_lead(api, caller, req, id(0), id(1)).await,
        Op::WebhookVerify | Op::Webhook => public_op(api, req, op).await,
    }
}

/// Answers a route Meta calls, which no bearer token opens.
pub(crate) async fn public(
    api: &Api,
    req: &Request,
    route: &Route,
) -> Result<Response<Body>, ApiError> {
    public_op(api, req, route.op).await
}

async fn public_op(api: &Api, req: &Request, op: Op) -> Result<Response<Body>, ApiError> {
    match op {
        Op::WebhookVerify => webhooks::verify(api, req).await,
        Op::Webhook => webhooks::receive(api, req).await,
        _ => Err(ApiError::not_found("no such route")),
    }
}

/// The methods a path answers to.
fn allowed_methods(segments: &[&str]) -> Vec<&'static str> {
    let mut methods: Vec<&'static str> = ROUTES
        .iter()
        .filter(|r| ids(r, segments).is_some())
        .map(|r| r.method)
        .collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

/// `405` with the `Allow` header: the path exists, the method does not.
fn method_not_allowed(method: &str, allow: &[&str]) -> Response<Body> {
    let mut response = ApiError::new(
        adtrail_domain::error_codes::ErrorCode::MethodNotAllowed,
        format!(
            "method: {} is not allowed here; use {}",
            method.chars().take(16).collect::<String>(),
            allow.join(", ")
        ),
    )
    .into_response();
    if let Ok(v) = lambda_http::http::HeaderValue::from_str(&allow.join(", ")) {
        response.headers_mut().insert("allow", v);
    }
    response
}
