//! What tests, the demo and the local stack see and steer of the fake in
//! process: its address, its knobs, the requests it served and the events
//! it accepted, tokens it refuses from now on (or takes again), and the
//! Pages the app is subscribed to; and the same knobs and requests over
//! HTTP (`/_fake/knobs`, `/_fake/requests`) for a stack in another process.

use std::net::SocketAddr;

use axum::Json;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::capi::AcceptedEvent;
use crate::knobs::{Knobs, RecordedRequest};
use crate::server::{FakeMeta, Inner, Shared};

impl FakeMeta {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.shared.base_url.clone()
    }
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Changes the knobs.
    pub fn set_knobs(&self, knobs: Knobs) {
        self.lock().knobs = knobs;
    }
    pub fn knobs(&self) -> Knobs {
        self.lock().knobs.clone()
    }
    /// Applies a change to the knobs.
    pub fn tune(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut self.lock().knobs);
    }
    /// Every request served so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }
    pub fn clear_requests(&self) {
        self.lock().requests.clear();
    }
    /// Every Conversions API event accepted so far.
    pub fn accepted_events(&self) -> Vec<AcceptedEvent> {
        self.lock().accepted.clone()
    }

    /// Events accepted by requests whose answer the fake then withheld
    /// (`accept_then_timeout`).
    pub fn unanswered_events(&self) -> usize {
        self.lock().unanswered
    }

    /// Refuses `token` from now on, like an expired token.
    pub fn kill_token(&self, token: &str) {
        self.lock().dead_tokens.insert(token.to_owned());
    }
    /// Takes `token` again, as Meta takes a Page token its user renewed.
    pub fn revive_token(&self, token: &str) {
        self.lock().dead_tokens.remove(token);
    }
    /// Whether the app is subscribed to `page`'s `leadgen` field.
    pub fn page_subscribed(&self, page: &str) -> bool {
        self.lock().subscribed_pages.contains(page)
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.shared.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The fake's own controls over HTTP: its knobs, and the requests it
/// recorded.
pub(crate) fn over_http(
    shared: &Shared,
    method: &Method,
    path: &str,
    body: &[u8],
) -> Option<Response> {
    match (method, path) {
        (&Method::POST, "/_fake/knobs") => Some(match serde_json::from_slice::<Knobs>(body) {
            Ok(k) => {
                shared.inner.lock().unwrap_or_else(|e| e.into_inner()).knobs = k;
                StatusCode::NO_CONTENT.into_response()
            }
            Err(_) => StatusCode::BAD_REQUEST.into_response(),
        }),
        (&Method::GET, "/_fake/requests") => {
            let inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
            Some(Json(json!(inner.requests)).into_response())
        }
        _ => None,
    }
}
