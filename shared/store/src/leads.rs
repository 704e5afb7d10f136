//! Leads and the outbox: a lead change, the marker that makes its
//! `changeId` seen, the column entry it counts for, and the conversions it
//! queues are one `TransactWriteItems`, so a conversion exists exactly when
//! the change that caused it does (the message to the send queue follows).
//! The lead's `version` makes each write conditional on what the change
//! was decided from.

use std::collections::BTreeMap;

use adtrail_domain::capi::EventName;
use adtrail_domain::leads::{Lead, Stage};

use crate::attr::{FromItem, Item, get_n, get_s, n, need_s, s};
use crate::keys::{PK, SK, change_pk, lead_pk};
use crate::{Leads, StoreError};

impl FromItem for Lead {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        let conversions: BTreeMap<String, String> =
            serde_json::from_str(get_s(item, "conversions").unwrap_or("{}"))
                .map_err(|_| StoreError::Malformed("lead conversions".into()))?;
        let entries: Vec<(String, i64)> =
            serde_json::from_str(get_s(item, "entries").unwrap_or("[]"))
                .map_err(|_| StoreError::Malformed("lead entries".into()))?;
        Ok(Self {
            site_id: need_s(item, "siteId")?,
            lead_key: need_s(item, "leadKey")?,
            lead_id: need_s(item, "leadId")?,
            origin: need_s(item, "origin")?,
            ad_id: get_s(item, "adId").map(str::to_owned),
            label: get_s(item, "label").map(str::to_owned),
            column: get_s(item, "column").map(str::to_owned),
            stage: get_s(item, "stage")
                .and_then(Stage::parse)
                .unwrap_or(Stage::Open),
            revenue_cents: get_n(item, "revenueCents"),
            created_at: get_n(item, "createdAt").unwrap_or(0),
            cohort_day: get_n(item, "cohortDay").unwrap_or(0),
            last_move_at: get_n(item, "lastMoveAt").unwrap_or(0),
            conversions: conversions
                .into_iter()
                .filter_map(|(k, v)| Some((EventName::parse(&k)?, v)))
                .collect(),
            entries,
            version: get_n(item, "version").unwrap_or(0),
        })
    }
}

/// The lead's item, its version one past the one it was read at.
pub(crate) fn lead_item(lead: &Lead, now: i64) -> Result<Item, StoreError> {
    let conversions: BTreeMap<&str, &str> = lead
        .conversions
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut item: Item = [
        (PK, s(lead_pk(&lead.site_id))),
        (SK, s(&lead.lead_key)),
        ("siteId", s(&lead.site_id)),
        ("leadKey", s(&lead.lead_key)),
        ("leadId", s(&lead.lead_id)),
        ("origin", s(&lead.origin)),
        ("stage", s(lead.stage.as_str())),
        ("createdAt", n(lead.created_at)),
        ("cohortDay", n(lead.cohort_day)),
        ("lastMoveAt", n(lead.last_move_at)),
        ("conversions", s(to_json(&conversions)?)),
        ("entries", s(to_json(&lead.entries)?)),
        ("version", n(lead.version + 1)),
        ("updatedAt", n(now)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (k, v) in [
        ("adId", &lead.ad_id),
        ("label", &lead.label),
        ("column", &lead.column),
    ] {
        if let Some(v) = v {
            item.insert(k.to_owned(), s(v));
        }
    }
    if let Some(cents) = lead.revenue_cents {
        item.insert("revenueCents".into(), n(cents));
    }
    Ok(item)
}

/// The lead's small JSON attributes.
pub(crate) fn to_json(v: &impl serde::Serialize) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Malformed(e.to_string()))
}

impl Leads<'_> {
    /// The lead, if recorded.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_lead(&self, site: &str, lead_key: &str) -> Result<Option<Lead>, StoreError> {
        let item = self.read_item(lead_pk(site), lead_key).await?;
        item.as_ref().map(Lead::from_item).transpose()
    }

    /// Leads by key (absent ones left out).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn get_leads(&self, site: &str, keys: &[String]) -> Result<Vec<Lead>, StoreError> {
        let keys = keys.iter().map(|k| (lead_pk(site), k.clone())).collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(Lead::from_item)
            .collect()
    }

    /// Whether the site saw `change_id` before.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn change_seen(&self, site: &str, change_id: &str) -> Result<bool, StoreError> {
        Ok(self.read_item(change_pk(site), change_id).await?.is_some())
    }
}
