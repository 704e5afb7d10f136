//! A fake Meta Graph API (v25.0) for the local stack and the tests: a
//! deterministic sample agency served over real HTTP, as strict as Meta about
//! how it is called, with knobs for Meta's faults.
//!
//! The sample agency has four ad accounts, two per client: Loja X bills in
//! BRL from São Paulo and Manaus, Pet Mania in USD from New York and Los
//! Angeles. Each has 3 campaigns × 2 ad sets × 4 ads. Every ad has a spend
//! for any date, derived from a hash of the ad and the date, and about one
//! ad-day in five spends nothing and is left out, as Meta leaves it out.
//!
//! Knobs (in process through [`FakeMeta::knobs`], or `POST /_fake/knobs`):
//! throttling with Meta's codes and usage headers, 5xx answers, the "reduce
//! the amount of data" error above a row count, latency (everywhere or on
//! one endpoint), a token that dies
//! after a number of calls, random faults (5xx, throttles, timeouts) on a
//! seeded generator, events to reject. Every request served is recorded, and
//! every Conversions API event accepted.

mod agency;
mod capi;
mod control;
mod forms;
mod graph;
mod knobs;
mod leads;
mod login;
mod pages;
mod refusals;
mod server;
mod wire;

pub use agency::{
    LOJA_PAGE, LOJA_PIXEL, ME_ID, ME_NAME, PET_PIXEL, SAMPLE_PAGES, SampleAccount, SampleAd,
    page_token, sample_accounts,
};
pub use capi::AcceptedEvent;
pub use forms::{SAMPLE_FORMS, sample_questions, wide_forms};
pub use knobs::{Knobs, RandomFaults, RecordedRequest, Throttle};
pub use leads::{Delivery, Submission, Submitted, signature};
pub use login::{FAKE_APP_ID, FAKE_APP_SECRET, FAKE_WEBHOOK_VERIFY_TOKEN};
pub use server::FakeMeta;
