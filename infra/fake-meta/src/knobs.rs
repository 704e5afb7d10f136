//! The fake's knobs: the faults a test or the demo asks for (throttles,
//! 5xx, random faults on a seeded generator, refused permissions, slow
//! answers), and the record of each request served.

use serde::{Deserialize, Serialize};

/// A throttle Meta answers with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Throttle {
    /// 4, 17 or 80000.
    pub code: i64,
    /// Requests still to refuse.
    pub remaining: u32,
    /// `estimated_time_to_regain_access`, minutes.
    pub regain_minutes: i64,
    /// Only requests whose path contains this are throttled.
    #[serde(default)]
    pub only_path: Option<String>,
}

/// A share of requests that fail at random (on a seeded generator, so a
/// run can be repeated): a 5xx, a throttle, or a timeout (the fake waits
/// `timeout_ms`, longer than the client's timeout, then answers 503 having
/// accepted nothing).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RandomFaults {
    pub pct: u32,
    pub seed: u64,
    pub timeout_ms: u64,
    /// A fourth kind of fault on `POST /{pixel}/events`: the events are
    /// accepted, then the answer comes only after `timeout_ms`.
    #[serde(default)]
    pub accept_then_timeout: bool,
    /// Only requests whose path contains this fail.
    #[serde(default)]
    pub only_path: Option<String>,
}

/// Faults to inject. Defaults: none.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct Knobs {
    pub throttle: Option<Throttle>,
    /// The percentage every answer's `X-App-Usage` reports.
    pub usage_pct: Option<u32>,
    /// Requests still to answer with a 5xx.
    pub fail_5xx: u32,
    /// Above this many rows in one insights range, Meta asks to reduce data.
    pub row_cap: Option<usize>,
    /// `GET /act_…/ads` with a `limit` above this answers code 1, "Please
    /// reduce the amount of data you're asking for", as Meta does for
    /// accounts with heavy creatives.
    pub ads_limit_cap: Option<usize>,
    pub latency_ms: u64,
    /// One endpoint slow while the others answer (as when one of Meta's
    /// backends is): requests whose path ends with this (`/me/accounts`,
    /// the user's Pages) answer after `slow_ms` more.
    pub slow_path: Option<String>,
    pub slow_ms: u64,
    /// After this many more authorized calls, the token of the next call
    /// dies: it is refused like an expired token from then on.
    pub token_dies_after: Option<u32>,
    /// Largest page any list answers, whatever `limit` asks.
    pub max_page: Option<usize>,
    /// Refuse insights and ads as Meta does for a token without `ads_read`
    /// on the account (code 200).
    pub deny_permission: bool,
    /// Ad accounts whose pixels the token may not read (code 200).
    pub deny_pixels: Vec<String>,
    pub random_faults: Option<RandomFaults>,
    /// Conversions API events (by `event_id`) Meta calls invalid: a request
    /// holding one is rejected whole.
    pub reject_event_ids: Vec<String>,
    /// Ads that spent nothing lately and are archived: left out of the ads
    /// listing and of insights, answered only when asked for by id.
    pub archived_ads: Vec<String>,
    /// Refuse `POST /{pixel}/events` as Meta does for a token without
    /// access to the dataset (code 200).
    pub deny_events: bool,
    /// Requests still to answer with `events_received` one short of what
    /// was sent (all of it accepted).
    pub short_receipts: u32,
    /// `POST /{pixel}/events` requests still to accept and then leave
    /// unanswered past the client's timeout (Meta took the events; the
    /// sender cannot know).
    pub accept_then_timeout: u32,
    /// A big agency: this many more ad accounts listed after the sample's
    /// (`act_8000000000`, …, no spend), the first `pixel_accounts` of them
    /// owning a pixel each.
    pub extra_accounts: usize,
    pub pixel_accounts: usize,
    /// Refuse to trade a short-lived user token for a long-lived one.
    pub fail_token_exchange: bool,
    /// A wide account: each account's insights also hold this many more
    /// ads, every name at the 400 characters adtrail keeps (the worker's
    /// memory at its largest part).
    pub wide_ads: usize,
    /// A Page of many forms: the first sample Page also lists this many
    /// forms of about 30 KB of questions each (`7009…`, one in ten active),
    /// the first of 1.1 MB.
    pub wide_forms: usize,
}

/// One request the fake served.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub query: String,
    pub authorization: Option<String>,
    pub status: u16,
}
