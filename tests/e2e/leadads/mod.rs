//! Meta Lead Ads: the webhook's doors.

mod pages;
mod webhook;
