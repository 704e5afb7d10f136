//! Time as every handler reads it: from one injected clock.
//!
//! Production reads the system clock; the local runner and the tests use a
//! virtual clock they can move, so a one-hour back-off is tested in
//! milliseconds while the stored times keep the real schedule.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds in a day, an hour, a minute.
pub const DAY_MS: i64 = 86_400_000;
pub const HOUR_MS: i64 = 3_600_000;
pub const MINUTE_MS: i64 = 60_000;

/// The clock a handler reads: epoch milliseconds.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }
}

/// A clock that moves only when told to; clones share the same instant.
#[derive(Debug, Clone)]
pub struct VirtualClock(Arc<AtomicI64>);

impl VirtualClock {
    pub fn starting_at(now_ms: i64) -> Self {
        Self(Arc::new(AtomicI64::new(now_ms)))
    }
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
    pub fn advance(&self, ms: i64) -> i64 {
        self.0.fetch_add(ms, Ordering::SeqCst) + ms
    }
}

impl Clock for VirtualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A shared handle on whichever clock is in use.
pub type SharedClock = Arc<dyn Clock>;

/// The UTC day (its start, epoch ms) an instant falls on.
pub fn utc_day(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}
