//! Recording a lead change: the one use case the API's lead routes and the
//! Lead Ads worker share. Read the site, the lead and its board, let the
//! domain decide, keep each event once per lead, write the outbox in one
//! transaction, then put the new rows' messages on the send queue. A change
//! that raced another change of the same lead is decided again from fresh
//! reads. Callers parse and answer; this crate orchestrates; the domain
//! decides; the store writes. Also: reading a linked Page's forms from Meta
//! (`forms`), which the API, the Lead Ads worker and the sweeper share.

pub mod forms;
mod outbox;
mod record;

pub use outbox::{Targets, enqueue, targets};
pub use record::{MAX_TRIES, RecordError, Recorded, record};
