//! A run's ending as the parts of an update of its link, so that the same
//! ending is written alone ([`Links::finish_run`](crate::Links::finish_run))
//! or within the run's last spend transaction, whose update of the link is
//! already the lease's check (`spend/held.rs`): a run that ends there
//! writes its link once, not twice.

use adtrail_domain::outcome::{Change, LinkUpdate};

use super::Seen;
use crate::attr::{Item, n, s};
use crate::keys::{due_shard, slot_shard};

/// An ending's clauses and values. The run's own lease (`runId = :run`)
/// is not among the conditions: the update it goes into carries it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ending {
    pub(crate) set: Vec<&'static str>,
    pub(crate) remove: Vec<&'static str>,
    pub(crate) condition: Vec<&'static str>,
    pub(crate) values: Item,
}

/// The ending `u` makes of a link whose schedule the run read as `seen`.
/// The schedule is written only where it changed from what the run read:
/// a link that keeps its slot, or whose next sync is what its lease set,
/// stays where it is in its index, which saves the index's writes; one
/// that takes a slot leaves `due` for `slot`, and one that leaves its slot
/// (a back-off, a backfill, a sync asked for) goes back to `due`. Unless
/// the run saw a sync requested, the ending also needs none to have been
/// asked for since: the ending clears the request, and one asked for after
/// the run's read would be lost.
pub(crate) fn ending(site: &str, account: &str, u: &LinkUpdate, seen: &Seen) -> Ending {
    let mut e = Ending {
        set: vec!["syncState = :state", "failures = :failures"],
        remove: vec!["runId", "syncRequested", "runStartedAt"],
        ..Ending::default()
    };
    e.values.insert(":state".into(), s(u.sync_state.as_str()));
    e.values.insert(":failures".into(), n(u.failures));
    if !seen.sync_requested {
        e.condition.push("attribute_not_exists(syncRequested)");
    }
    let same_time = seen.next_sync_at == Some(u.next_sync_at);
    match (seen.slot, u.slot) {
        // The same slot (an operator's new interval places it anew).
        (Some(held), Some(place)) if held == place && same_time => {}
        (held, Some(place)) => {
            e.set
                .extend(["slotShard = :slotShard", "slot = :slot", "slotAt = :next"]);
            if held.is_none() {
                e.remove.extend(["dueShard", "nextSyncAt"]);
                // True while the run holds the link; it also says the
                // slot entry is a new one, not a move.
                e.condition.push("attribute_not_exists(slotShard)");
            }
            e.values
                .insert(":slotShard".into(), s(slot_shard(place.cadence)));
            e.values.insert(":slot".into(), n(place.slot));
            e.values.insert(":next".into(), n(u.next_sync_at));
        }
        (Some(_), None) => {
            e.set.extend(["dueShard = :dueShard", "nextSyncAt = :next"]);
            e.remove.extend(["slotShard", "slot", "slotAt"]);
            e.condition.push("attribute_not_exists(dueShard)");
            e.values
                .insert(":dueShard".into(), s(due_shard(site, account)));
            e.values.insert(":next".into(), n(u.next_sync_at));
        }
        (None, None) if same_time => {}
        (None, None) => {
            e.set.push("nextSyncAt = :next");
            e.values.insert(":next".into(), n(u.next_sync_at));
        }
    }
    match u.quiet_lease_ms {
        Some(ms) => {
            e.set.push("leaseMs = :lease");
            e.values.insert(":lease".into(), n(ms));
        }
        None => e.remove.push("leaseMs"),
    }
    for (value, assign, attr, placeholder) in [
        (&u.last_error, "lastError = :err", "lastError", ":err"),
        (
            &u.catalog_digest,
            "catalogDigest = :catalog",
            "catalogDigest",
            ":catalog",
        ),
    ] {
        match value {
            Some(v) => {
                e.set.push(assign);
                e.values.insert(placeholder.into(), s(v));
            }
            None => e.remove.push(attr),
        }
    }
    match u.backfill_from {
        Change::Set(d) => {
            e.set.push("backfillFrom = :from");
            e.values.insert(":from".into(), s(d.to_string()));
        }
        Change::Clear => e.remove.push("backfillFrom"),
        Change::Keep => {}
    }
    for (value, assign, placeholder) in [
        (u.last_sync_at, "lastSyncAt = :last", ":last"),
        (
            u.last_daily_resync_at,
            "lastDailyResyncAt = :daily",
            ":daily",
        ),
        (u.last_full_resync_at, "lastFullResyncAt = :full", ":full"),
    ] {
        if let Some(v) = value {
            e.set.push(assign);
            e.values.insert(placeholder.into(), n(v));
        }
    }
    e
}
