//! Leads and the outbox: a lead change, the marker that makes its
//! `changeId` seen, the column entry it counts for, and the conversions it
//! queues are one `TransactWriteItems`, so a conversion exists exactly when
//! the change that caused it does (the message to the send queue follows).
//! The lead's `version` makes each write conditional on what the change
//! was decided from.

use adtrail_domain::leads::Lead;

use crate::attr::{FromItem, Item};
use crate::items::{LeadItem, decode, encode};
use crate::keys::{change_pk, lead_pk};
use crate::{Leads, StoreError};

impl FromItem for Lead {
    fn from_item(item: &Item) -> Result<Self, StoreError> {
        decode::<LeadItem>(item, "lead")?.try_into()
    }
}

/// The lead's item, its version one past the one it was read at.
pub(crate) fn lead_item(lead: &Lead, now: i64) -> Result<Item, StoreError> {
    encode(&LeadItem::of(lead, lead_pk(&lead.site_id), now), "lead")
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
