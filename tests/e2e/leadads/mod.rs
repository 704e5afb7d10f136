//! Meta Lead Ads: the webhook's doors, the owner's Pages, and the leadgen worker.

mod pages;
pub(crate) mod webhook;
mod worker;
