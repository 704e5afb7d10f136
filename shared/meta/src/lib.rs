//! The Meta Graph API client (v25.0): the same `reqwest` client in tests
//! (against the fake Graph API) and in production.
//!
//! Tokens travel in the `Authorization` header, never in a URL. Every answer
//! is untrusted: bodies are bounded, `paging.next` is followed only on the
//! configured origin, text fields are length-checked, and Meta's error
//! messages are cut short and scrubbed of the token before they are kept.

mod client;
mod error;
mod login;
pub mod types;

pub use client::{
    GraphClient, GraphConfig, INSIGHTS_PAGE_SIZE, MAX_INSIGHTS_PAGES, timeout_from_env,
    too_much_data,
};
pub use error::GraphError;
pub use login::{IssuedToken, TokenInfo};
pub use types::*;

/// The Graph API version every call pins.
pub const GRAPH_VERSION: &str = "v25.0";
