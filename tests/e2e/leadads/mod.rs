//! Meta Lead Ads: the webhook's doors.

mod webhook;
