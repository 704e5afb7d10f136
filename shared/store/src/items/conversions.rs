//! The items of the conversion path: a lead and its conversions.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::leads::{Lead, NewConversion, Stage};
use serde::{Deserialize, Serialize};

use super::json_text;
use super::parse;
use crate::error::StoreError;

/// `lead#<siteId>` / `<leadKey>`: written whole, over its version.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeadItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    lead_key: String,
    lead_id: String,
    origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ad_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column: Option<String>,
    stage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revenue_cents: Option<i64>,
    created_at: i64,
    cohort_day: i64,
    last_move_at: i64,
    /// Event name → the conversion's reference.
    #[serde(with = "json_text")]
    conversions: BTreeMap<String, String>,
    /// `(column, dayStart)` entries it counts in.
    #[serde(with = "json_text")]
    entries: Vec<(String, i64)>,
    version: i64,
    updated_at: i64,
}

impl LeadItem {
    /// The item of `lead`, one version past the one it was read at.
    pub(crate) fn of(lead: &Lead, pk: String, now: i64) -> Self {
        LeadItem {
            pk,
            sk: lead.lead_key.clone(),
            site_id: lead.site_id.clone(),
            lead_key: lead.lead_key.clone(),
            lead_id: lead.lead_id.clone(),
            origin: lead.origin.clone(),
            ad_id: lead.ad_id.clone(),
            label: lead.label.clone(),
            column: lead.column.clone(),
            stage: lead.stage.as_str().to_owned(),
            revenue_cents: lead.revenue_cents,
            created_at: lead.created_at,
            cohort_day: lead.cohort_day,
            last_move_at: lead.last_move_at,
            conversions: lead
                .conversions
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect(),
            entries: lead.entries.clone(),
            version: lead.version + 1,
            updated_at: now,
        }
    }
}

impl TryFrom<LeadItem> for Lead {
    type Error = StoreError;
    fn try_from(i: LeadItem) -> Result<Self, StoreError> {
        Ok(Lead {
            stage: parse(Stage::parse(&i.stage), "lead", "stage")?,
            site_id: i.site_id,
            lead_key: i.lead_key,
            lead_id: i.lead_id,
            origin: i.origin,
            ad_id: i.ad_id,
            label: i.label,
            column: i.column,
            revenue_cents: i.revenue_cents,
            created_at: i.created_at,
            cohort_day: i.cohort_day,
            last_move_at: i.last_move_at,
            conversions: i
                .conversions
                .into_iter()
                .map(|(k, v)| Ok((parse(EventName::parse(&k), "lead", "conversion event")?, v)))
                .collect::<Result<_, StoreError>>()?,
            entries: i.entries,
            version: i.version,
        })
    }
}

/// `conv#<siteId>` / `<createdAt>#<eventId>`. Its writes are updates of
/// a few attributes, save the outbox's, which puts it whole.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionItem {
    #[serde(default, skip_deserializing)]
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    event_id: String,
    event_name: String,
    lead_id: String,
    lead_key: String,
    event_time: i64,
    created_at: i64,
    status: String,
    attempts: i64,
    /// Written only once true: an absent flag is a row no attempt of
    /// which went unanswered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unsure: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_cents: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    /// Hashed phones: a string set, erased when delivery ends (an empty
    /// set cannot be stored).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "serde_dynamo::string_set"
    )]
    ph: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    external_id: Option<String>,
    /// The `work` index: the shard and the time its attempt is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work_at: Option<i64>,
}

impl ConversionItem {
    /// A new pending row of `lead` (or a failed one opened again), due
    /// now.
    pub(crate) fn pending(
        c: &NewConversion,
        lead: &Lead,
        keys: (String, i64, String),
        now: i64,
    ) -> Self {
        let (pk, created_at, work_shard) = keys;
        ConversionItem {
            pk,
            sk: c.sk.clone(),
            site_id: lead.site_id.clone(),
            event_id: c.event_id.clone(),
            event_name: c.event_name.as_str().to_owned(),
            lead_id: lead.lead_id.clone(),
            lead_key: lead.lead_key.clone(),
            event_time: c.event_time,
            created_at,
            status: ConversionStatus::Pending.as_str().to_owned(),
            attempts: 0,
            unsure: false,
            next_attempt_at: Some(now),
            lease_until: None,
            value_cents: c.value_cents,
            currency: c.currency.clone(),
            sent_at: None,
            last_error: None,
            ph: c.hashes.ph.clone(),
            external_id: c.hashes.external_id.clone(),
            work_shard: Some(work_shard),
            work_at: Some(now),
        }
    }
}

impl TryFrom<ConversionItem> for Conversion {
    type Error = StoreError;
    fn try_from(i: ConversionItem) -> Result<Self, StoreError> {
        let hashes = (!i.ph.is_empty() || i.external_id.is_some()).then_some(ContactHashes {
            ph: i.ph,
            external_id: i.external_id,
        });
        Ok(Conversion {
            event_name: parse(EventName::parse(&i.event_name), "conversion", "eventName")?,
            status: parse(ConversionStatus::parse(&i.status), "conversion", "status")?,
            site_id: i.site_id,
            sk: i.sk,
            event_id: i.event_id,
            lead_id: i.lead_id,
            lead_key: i.lead_key,
            event_time: i.event_time,
            created_at: i.created_at,
            attempts: i.attempts,
            next_attempt_at: i.next_attempt_at,
            lease_until: i.lease_until,
            value_cents: i.value_cents,
            currency: i.currency,
            sent_at: i.sent_at,
            last_error: i.last_error,
            hashes,
            work_at: i.work_at,
            unsure: i.unsure,
        })
    }
}
