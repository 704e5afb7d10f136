//! The route table.

mod board;
mod connections;
mod conversions;
mod leads;
mod leads_report;
mod links;
mod login;
mod pixels;
mod reads;
mod reports;
mod sites;

use lambda_http::{Body, Request, Response};

use crate::Api;
use crate::auth::Caller;
use crate::error::ApiError;

pub(crate) async fn route(
    api: &Api,
    caller: &Caller,
    req: &Request,
    method: &str,
    path: &str,
) -> Result<Response<Body>, ApiError> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("PUT", ["v1", "sites", site]) => sites::put_site(api, caller, req, site).await,
        ("PUT", ["v1", "meta", "connections", owner]) => {
            connections::put_connection(api, caller, req, owner).await
        }
        ("POST", ["v1", "meta", "connections", owner, "login"]) => {
            login::login(api, caller, req, owner).await
        }
        ("POST", ["v1", "meta", "connections", owner, "refresh"]) => {
            connections::refresh_connection(api, caller, owner).await
        }
        ("DELETE", ["v1", "meta", "connections", owner]) => {
            connections::delete_connection(api, caller, owner).await
        }
        (
            "GET",
            [
                "v1",
                "sites",
                site,
                "ad-accounts",
                account,
                "unlink-preview",
            ],
        ) => links::unlink_preview(api, caller, site, account).await,
        ("GET", ["v1", "meta", "connections", owner]) => {
            connections::get_connection(api, caller, owner).await
        }
        ("PUT", ["v1", "sites", site, "ad-accounts", account]) => {
            links::link(api, caller, req, site, account).await
        }
        ("DELETE", ["v1", "sites", site, "ad-accounts", account]) => {
            links::unlink(api, caller, req, site, account).await
        }
        ("POST", ["v1", "sites", site, "sync"]) => links::sync_now(api, caller, site).await,
        ("PUT", ["v1", "sites", site, "pixel"]) => pixels::put_pixel(api, caller, req, site).await,
        ("DELETE", ["v1", "sites", site, "pixel"]) => {
            pixels::delete_pixel(api, caller, req, site).await
        }
        ("PUT", ["v1", "sites", site, "pipeline"]) => {
            board::put_pipeline(api, caller, req, site).await
        }
        ("PUT", ["v1", "sites", site, "event-map"]) => {
            board::put_event_map(api, caller, req, site).await
        }
        ("GET", ["v1", "sites", site, "event-map"]) => {
            board::get_event_map(api, caller, req, site).await
        }
        ("POST", ["v1", "sites", site, "leads"]) => {
            leads::record_lead(api, caller, req, site).await
        }
        ("POST", ["v1", "sites", site, "leads", lead, "stage"]) => {
            leads::move_lead(api, caller, req, site, lead).await
        }
        ("DELETE", ["v1", "sites", site, "leads", lead]) => {
            leads::delete_lead(api, caller, site, lead).await
        }
        ("GET", ["v1", "sites", site, "conversions"]) => {
            conversions::list(api, caller, req, site).await
        }
        ("GET", ["v1", "meta", "status"]) => reads::status(api, caller, req).await,
        ("GET", ["v1", "reports", "daily"]) => reports::daily(api, caller, req).await,
        ("GET", ["v1", "reports", "leads"]) => leads_report::leads(api, caller, req).await,
        ("GET", ["v1", "sites", site, "spend"]) => reads::spend(api, caller, req, site).await,
        _ => Err(ApiError::not_found("no such route")),
    }
}
