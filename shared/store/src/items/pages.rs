//! The item of a Page an owner's token lists: its name and tasks, its own
//! token sealed.

use adtrail_domain::leadads::{OwnerPage, PageLink};
use serde::{Deserialize, Serialize};

/// `page#<ownerKey>` / `<pageId>`: written whole each time a connect,
/// login or refresh lists the Page.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    owner_key: String,
    page_id: String,
    name: String,
    #[serde(default)]
    tasks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "serde_bytes")]
    sealed_token: Vec<u8>,
    token_version: String,
    listed_at: i64,
}

impl PageItem {
    pub(crate) fn of(p: &OwnerPage, pk: String) -> Self {
        PageItem {
            pk,
            sk: p.page_id.clone(),
            owner_key: p.owner_key.clone(),
            page_id: p.page_id.clone(),
            name: p.name.clone(),
            tasks: p.tasks.clone(),
            sealed_token: p.sealed_token.clone(),
            token_version: p.token_version.clone(),
            listed_at: p.listed_at,
        }
    }
}

impl From<PageItem> for OwnerPage {
    fn from(i: PageItem) -> Self {
        OwnerPage {
            owner_key: i.owner_key,
            page_id: i.page_id,
            name: i.name,
            tasks: i.tasks,
            sealed_token: i.sealed_token,
            token_version: i.token_version,
            listed_at: i.listed_at,
        }
    }
}

/// `pagelink#<pageId>` / `link` and `sitepage#<siteId>` / `<pageId>`: the
/// same link from both sides, written and removed in one transaction. The
/// Page's side sits in the work index (`recon#<n>`, `workAt`: its next
/// reconciliation).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageLinkItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    page_id: String,
    owner_key: String,
    subscribed_at: i64,
    #[serde(default)]
    reconciled_through: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_reconcile_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work_at: Option<i64>,
}

impl PageLinkItem {
    pub(crate) fn of(l: &PageLink, pk: String, sk: String) -> Self {
        PageLinkItem {
            pk,
            sk,
            site_id: l.site_id.clone(),
            page_id: l.page_id.clone(),
            owner_key: l.owner_key.clone(),
            subscribed_at: l.subscribed_at,
            reconciled_through: l.reconciled_through,
            last_reconcile_at: l.last_reconcile_at,
            last_error: l.last_error.clone(),
            work_shard: None,
            work_at: None,
        }
    }
}

impl From<PageLinkItem> for PageLink {
    fn from(i: PageLinkItem) -> Self {
        PageLink {
            site_id: i.site_id,
            page_id: i.page_id,
            owner_key: i.owner_key,
            subscribed_at: i.subscribed_at,
            reconciled_through: i.reconciled_through,
            last_reconcile_at: i.last_reconcile_at,
            last_error: i.last_error,
        }
    }
}
