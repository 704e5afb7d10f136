//! Meta Lead Ads: the webhook's doors.

mod pages;
pub(crate) mod webhook;
