//! A link between a site and a Meta ad account: who linked it, its sync
//! cursor and state, and the run that holds it.

use crate::outcome::SyncState;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteAdAccount {
    pub site_id: String,
    pub ad_account_id: String,
    pub owner_key: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
    pub sync_state: SyncState,
    pub last_sync_at: Option<i64>,
    pub last_daily_resync_at: Option<i64>,
    pub last_full_resync_at: Option<i64>,
    pub backfill_from: Option<String>,
    pub failures: u32,
    pub last_error: Option<String>,
    pub run_id: Option<String>,
    pub sync_requested: bool,
    /// `None` while paused (a dead token, an account no longer granted).
    pub next_sync_at: Option<i64>,
    pub created_at: i64,
    /// How long the dispatcher's next lease holds the link (and moves its
    /// next sync on), when not the sync interval: the quiet interval, set
    /// by a live run that found nothing delivered.
    pub lease_ms: Option<i64>,
    /// The digest ([`crate::catalog::digest`]) of what the account's last
    /// successful run learnt of the catalog and saved: a run that learns
    /// the same has nothing to merge, and reads no catalog entry.
    pub catalog_digest: Option<String>,
}

impl SiteAdAccount {
    /// Synced once its first backfill has ended: its spend is known.
    pub fn synced(&self) -> bool {
        self.last_sync_at.is_some()
    }
}
