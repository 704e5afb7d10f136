//! A lead's rules, without I/O: the leads vocabulary (stages, origins), a
//! lead as stored, and the one decision of what a host's change does: the
//! lead after it, the column it enters, the conversions it queues (once per
//! lead per event, a failed one opened again) and how it moves the cohort
//! counters. The API parses, reads, calls [`decide`], writes and enqueues;
//! the store only maps what is decided to items.

use std::collections::BTreeMap;

use crate::capi::EventName;
use crate::ids::IdError;
use crate::time::DAY_MS;

/// A lead's stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Open,
    Qualified,
    Won,
    Lost,
}

impl Stage {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "open" => Some(Stage::Open),
            "qualified" => Some(Stage::Qualified),
            "won" => Some(Stage::Won),
            "lost" => Some(Stage::Lost),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Open => "open",
            Stage::Qualified => "qualified",
            Stage::Won => "won",
            Stage::Lost => "lost",
        }
    }
}

/// Checks an `origin`: 1–32 of `a-z0-9_`.
pub fn check_origin(value: &str) -> Result<(), IdError> {
    if value.is_empty()
        || value.len() > 32
        || !value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(IdError::new(
            "origin",
            "must be 1 to 32 of lowercase letters, digits and _",
        ));
    }
    Ok(())
}

/// Paid origins carry the ad that brought the lead.
pub fn is_paid(origin: &str) -> bool {
    matches!(origin, "ctwa_ad" | "lead_form")
}

/// A lead as the rules need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadState {
    pub column: Option<String>,
    pub stage: Stage,
    /// When the last accepted move happened (the host's `occurredAt`).
    pub last_move_at: i64,
}

/// One change the host sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadChange<'a> {
    pub occurred_at: i64,
    pub stage: Option<Stage>,
    pub revenue_cents: Option<i64>,
    /// A column the board declares (an undeclared one was dropped before).
    pub column: Option<&'a str>,
}

/// What a change does to a lead.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    /// The change moves the lead (its time is not before the last move).
    pub accepted: bool,
    /// The column the lead enters, if it moves into another one.
    pub entered: Option<String>,
    pub stage: Option<Stage>,
    /// A sale: a move to `won` with a value.
    pub sale_cents: Option<i64>,
}

/// Applies a change to a lead (`None`: the change records it). A move
/// older than the lead's last move changes nothing, so a late retry never
/// moves a lead back; a move into the column the lead is in enters nothing.
pub fn apply_change(lead: Option<&LeadState>, change: &LeadChange<'_>) -> Applied {
    if let Some(l) = lead
        && change.occurred_at < l.last_move_at
    {
        return Applied::default();
    }
    let current = lead.and_then(|l| l.column.as_deref());
    let entered = change
        .column
        .filter(|c| Some(*c) != current)
        .map(str::to_owned);
    let sale_cents = match (change.stage, change.revenue_cents) {
        (Some(Stage::Won), Some(v)) if v > 0 => Some(v),
        _ => None,
    };
    Applied {
        accepted: true,
        entered,
        stage: change.stage,
        sale_cents,
    }
}

/// How long a column entry is kept: it counts for 30 days.
pub const ENTRY_KEPT_MS: i64 = 35 * DAY_MS;

/// A lead as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub site_id: String,
    pub lead_key: String,
    pub lead_id: String,
    pub origin: String,
    pub ad_id: Option<String>,
    /// The Meta instant form a Lead Ads lead came from: its cohort counts
    /// under the form too (the forms report).
    pub form_id: Option<String>,
    pub label: Option<String>,
    pub column: Option<String>,
    pub stage: Stage,
    pub revenue_cents: Option<i64>,
    /// When the lead first arrived (the host's `occurredAt`).
    pub created_at: i64,
    /// The UTC day it arrived on: its cohort.
    pub cohort_day: i64,
    pub last_move_at: i64,
    /// The reference of each of its conversions ([`conversion_ref`]), by
    /// event.
    pub conversions: BTreeMap<EventName, String>,
    /// The rows its changes queued for the site's destinations: slug →
    /// event → the row's reference ([`crate::events::row_ref`]), each
    /// (destination, event) once.
    pub routed: BTreeMap<String, BTreeMap<EventName, String>>,
    /// The column entries it counts in (`column`, `dayStart`).
    pub entries: Vec<(String, i64)>,
    /// 0 for a lead not yet written.
    pub version: i64,
}

/// Where a lead came in: a conversation the host's CRM records (`chat`:
/// WhatsApp, Messenger, a sales call), or a Meta instant form (`form`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Chat,
    Form,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Form => "form",
        }
    }
}

impl Lead {
    /// Its channel: a Lead Ads lead is known by its key, made from its
    /// `leadgen_id`; every other lead is one the host records.
    pub fn channel(&self) -> Channel {
        if crate::leadads::meta_lead_id(&self.lead_key).is_some() {
            Channel::Form
        } else {
            Channel::Chat
        }
    }

    /// The references of every row its changes queued: its pixel's and
    /// its destinations'.
    pub fn row_refs(&self) -> Vec<String> {
        self.conversions
            .values()
            .chain(self.routed.values().flat_map(|events| events.values()))
            .cloned()
            .collect()
    }

    pub(crate) fn state(&self) -> LeadState {
        LeadState {
            column: self.column.clone(),
            stage: self.stage,
            last_move_at: self.last_move_at,
        }
    }
}

mod decide;
mod route;
pub use decide::{
    LeadContext, LeadInput, LeadTargets, LeadUpdate, LeadWrite, NewConversion, NewLead, decide,
    once_per_lead,
};

#[cfg(test)]
mod form_lead_tests;
#[cfg(test)]
mod route_tests;
#[cfg(test)]
pub(crate) mod tests;
