//! The Conversions API end to end: the API writes leads and their outbox
//! rows, the runner drains the send queue into the capi-sender, and the fake
//! Meta records what it accepted. Time is the runner's virtual clock, which
//! also governs the delays the sender hands SQS. One module per part of the
//! sending.

use adtrail_tests::*;
use serde_json::Value;

mod answers;
mod batches;
mod deadline;
mod delivery;
mod events;
mod once;
mod platforms;
mod posted;
mod retries;
mod uncounted;

pub(super) async fn drain(h: &Harness) {
    h.runner().drain().await.expect("drain");
}

pub(super) fn lead_id(body: &Value) -> String {
    body["leadId"].as_str().expect("leadId").to_owned()
}
