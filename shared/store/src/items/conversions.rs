//! The items of the conversion path: a lead and its conversions.

use std::collections::BTreeMap;

use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::events::EventRow;
use adtrail_domain::identifiers::Platform;
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
    /// A Lead Ads lead's form; absent on every other lead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    form_id: Option<String>,
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
    /// Destination slug → event name → its row's reference; absent on a
    /// lead no destination had rows of.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "super::json_text_opt"
    )]
    routed: Option<BTreeMap<String, BTreeMap<String, String>>>,
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
            form_id: lead.form_id.clone(),
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
            routed: (!lead.routed.is_empty()).then(|| {
                lead.routed
                    .iter()
                    .map(|(slug, events)| {
                        let events = events
                            .iter()
                            .map(|(e, sk)| (e.as_str().to_owned(), sk.clone()))
                            .collect();
                        (slug.clone(), events)
                    })
                    .collect()
            }),
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
            form_id: i.form_id,
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
            routed: i
                .routed
                .unwrap_or_default()
                .into_iter()
                .map(|(slug, events)| {
                    let events = events
                        .into_iter()
                        .map(|(k, v)| Ok((parse(EventName::parse(&k), "lead", "routed event")?, v)))
                        .collect::<Result<_, StoreError>>()?;
                    Ok((slug, events))
                })
                .collect::<Result<_, StoreError>>()?,
            entries: i.entries,
            version: i.version,
        })
    }
}

/// The attributes that hold a row's contact data, erased (`REMOVE`) when
/// its delivery ends.
pub(crate) const MATCH_ATTRIBUTES: &str = "ph, externalId, em, fnHash, lnHash, signals";

/// The condition that a row's `uncounted` flag is as it was read: a write
/// that counts the row (or takes it off the counters) as counted or not
/// holds only while nobody counted it since.
pub(crate) fn uncounted_as(uncounted: bool) -> &'static str {
    if uncounted {
        "attribute_exists(uncounted)"
    } else {
        "attribute_not_exists(uncounted)"
    }
}

/// `conv#<siteId>` / `<createdAt>#<eventId>`. Its writes are updates of
/// a few attributes, save the outbox's, which puts it whole.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionItem {
    #[serde(default, skip_deserializing)]
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    event_id: String,
    event_name: String,
    /// Empty for a posted event's row (no lead).
    #[serde(default)]
    lead_id: String,
    #[serde(default)]
    lead_key: String,
    event_time: i64,
    created_at: i64,
    status: String,
    attempts: i64,
    /// Written only once true: an absent flag is a row no attempt of
    /// which went unanswered.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unsure: bool,
    /// Written only on a row put with no counter moves, and removed by
    /// the end that counts it ([`crate::receipts`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) uncounted: bool,
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
    /// Hashed e-mails: a string set, erased with the phones.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "serde_dynamo::string_set"
    )]
    em: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fn_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ln_hash: Option<String>,
    /// Plain signals the platform wants unhashed (IP, user agent, its
    /// click ids), erased with the hashes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    signals: BTreeMap<String, String>,
    /// The destination's slug; absent: the site's pixel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    destination: Option<String>,
    /// The destination's platform; absent: Meta (the pixel's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action_source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    order_id: Option<String>,
    /// The `work` index: the shard and the time its attempt is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work_at: Option<i64>,
}

impl ConversionItem {
    /// A pending row of `site` due now, holding `hashes`: what a lead's
    /// conversions and posted events have in common. `keys` are its
    /// partition, its creation time and its `work` shard (`None`: a send
    /// batch stands for it in the index).
    fn due(
        site: &str,
        sk: &str,
        keys: (String, i64, Option<String>),
        hashes: &ContactHashes,
        now: i64,
    ) -> Self {
        let (pk, created_at, work_shard) = keys;
        ConversionItem {
            pk,
            sk: sk.to_owned(),
            site_id: site.to_owned(),
            created_at,
            status: ConversionStatus::Pending.as_str().to_owned(),
            next_attempt_at: Some(now),
            ph: hashes.ph.clone(),
            external_id: hashes.external_id.clone(),
            em: hashes.em.clone(),
            fn_hash: hashes.first_name.clone(),
            ln_hash: hashes.last_name.clone(),
            signals: hashes.signals.clone(),
            work_shard,
            work_at: Some(now),
            ..ConversionItem::default()
        }
    }

    /// A new pending row of `lead` (or a failed one opened again), due
    /// now.
    pub(crate) fn pending(
        c: &NewConversion,
        lead: &Lead,
        keys: (String, i64, Option<String>),
        now: i64,
    ) -> Self {
        ConversionItem {
            event_id: c.event_id.clone(),
            event_name: c.event_name.as_str().to_owned(),
            lead_id: lead.lead_id.clone(),
            lead_key: lead.lead_key.clone(),
            event_time: c.event_time,
            value_cents: c.value_cents,
            currency: c.currency.clone(),
            ..Self::due(&lead.site_id, &c.sk, keys, &c.hashes, now)
        }
    }

    /// The pending row of a posted event for one destination, due now.
    pub(crate) fn posted(
        row: &EventRow,
        site: &str,
        keys: (String, i64, Option<String>),
        now: i64,
    ) -> Self {
        ConversionItem {
            event_id: row.event_id.clone(),
            event_name: row.event_name.as_str().to_owned(),
            event_time: row.event_time,
            value_cents: row.value_cents,
            currency: row.currency.clone(),
            destination: row.destination.clone(),
            platform: (row.platform != Platform::Meta).then(|| row.platform.as_str().to_owned()),
            action_source: Some(row.action_source.as_str().to_owned()),
            source_url: row.source_url.clone(),
            order_id: row.order_id.clone(),
            lead_id: row
                .lead
                .as_ref()
                .map(|l| l.lead_id.clone())
                .unwrap_or_default(),
            lead_key: row
                .lead
                .as_ref()
                .map(|l| l.lead_key.clone())
                .unwrap_or_default(),
            ..Self::due(site, &row.sk, keys, &row.hashes, now)
        }
    }
}

impl TryFrom<ConversionItem> for Conversion {
    type Error = StoreError;
    fn try_from(i: ConversionItem) -> Result<Self, StoreError> {
        let hashes = ContactHashes {
            ph: i.ph,
            external_id: i.external_id,
            em: i.em,
            first_name: i.fn_hash,
            last_name: i.ln_hash,
            signals: i.signals,
        };
        let hashes = (!hashes.is_empty()).then_some(hashes);
        let platform = match i.platform.as_deref() {
            None => Platform::Meta,
            Some(p) => parse(Platform::parse(p), "conversion", "platform")?,
        };
        Ok(Conversion {
            platform,
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
            in_send_batch: i.work_shard.is_none() && i.work_at.is_some(),
            work_at: i.work_at,
            unsure: i.unsure,
            uncounted: i.uncounted,
            destination: i.destination,
            action_source: i.action_source,
            source_url: i.source_url,
            order_id: i.order_id,
        })
    }
}
