//! The queues' messages and how they travel: the sync queue's
//! [`SyncMessage`], the send queue's [`SendMessage`] and the leadgen queue's
//! [`LeadgenMessage`], sent in batches of
//! ten (the most SQS takes in one call), and the visibility change a
//! consumer (the `capi-sender`, the `leadgen-worker`) uses as its retry
//! timer: [`Visibility`].

use serde::{Deserialize, Serialize};

#[cfg(feature = "sqs")]
mod sqs;
#[cfg(feature = "sqs")]
pub use sqs::Visibility;

/// One run of one ad account, leased by the dispatcher under `runId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncMessage {
    pub site_id: String,
    pub ad_account_id: String,
    pub run_id: String,
}

/// The message the send queue carries: which conversion row to send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendMessage {
    pub site_id: String,
    /// The conversion's reference (`<createdAt>#<eventId>`).
    pub key: String,
}

/// The message the leadgen queue carries: one form lead Meta announced,
/// ids only (its answers are read from Meta later, never carried).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeadgenMessage {
    pub page_id: String,
    pub leadgen_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ad_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adgroup_id: Option<String>,
    /// Epoch seconds, as Meta gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<i64>,
    /// Which door it came through: `webhook`, `forward` or `reconcile`.
    pub via: String,
}
