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
    /// The slot of a cadence the link's syncs keep, when they keep one;
    /// `None` while its next sync is a time of its own (a backfill, a
    /// back-off, a sync asked for, its first run after any of them).
    pub slot: Option<SlotPlace>,
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

/// The two cadences a link's syncs keep a slot of: the operator's sync
/// interval, or the quiet interval of an account that delivered nothing.
/// A link on a slot is found by the dispatcher at the same point of every
/// cycle, so a run that keeps the cadence moves no index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    Interval,
    Quiet,
}

/// A cadence and the account's point in its cycle: its next sync time
/// modulo the cadence, the same after every lease of one cadence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotPlace {
    pub cadence: Cadence,
    pub slot: i64,
}

impl SiteAdAccount {
    /// Synced once its first backfill has ended: its spend is known.
    pub fn synced(&self) -> bool {
        self.last_sync_at.is_some()
    }
}
