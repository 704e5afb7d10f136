//! The operator's sync cadence, as the template passes it to the
//! dispatcher and the sync worker: `SYNC_INTERVAL_MINUTES` and
//! `QUIET_SYNC_INTERVAL_MINUTES`.

/// The operator's sync cadence: `SYNC_INTERVAL_MINUTES` (the template's
/// `SyncIntervalMinutes`), the seed's 45 minutes when unset or empty.
///
/// # Errors
/// A message naming the variable when it is not 15 to 1440 minutes.
pub fn sync_interval_from_env() -> Result<adtrail_domain::plan::SyncInterval, String> {
    interval_from_env(
        "SYNC_INTERVAL_MINUTES",
        adtrail_domain::plan::SyncInterval::DEFAULT,
    )
}

/// The operator's quiet cadence, for accounts that delivered nothing:
/// `QUIET_SYNC_INTERVAL_MINUTES` (the template's `QuietSyncIntervalMinutes`),
/// three hours when unset or empty. One shorter than the sync interval
/// counts as the sync interval.
///
/// # Errors
/// A message naming the variable when it is not 15 to 1440 minutes.
pub fn quiet_interval_from_env() -> Result<adtrail_domain::plan::SyncInterval, String> {
    interval_from_env(
        "QUIET_SYNC_INTERVAL_MINUTES",
        adtrail_domain::plan::SyncInterval::QUIET_DEFAULT,
    )
}

fn interval_from_env(
    var: &str,
    default: adtrail_domain::plan::SyncInterval,
) -> Result<adtrail_domain::plan::SyncInterval, String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => {
            adtrail_domain::plan::SyncInterval::from_minutes(&v).map_err(|e| format!("{var}: {e}"))
        }
        _ => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sync_interval_comes_from_its_variable_and_a_bad_one_is_named() {
        use adtrail_domain::plan::SyncInterval;
        const VAR: &str = "SYNC_INTERVAL_MINUTES";
        // Only this test reads or writes the variable in this process.
        let set = |v: Option<&str>| match v {
            // SAFETY: no other thread of this test binary touches it.
            Some(v) => unsafe { std::env::set_var(VAR, v) },
            None => unsafe { std::env::remove_var(VAR) },
        };
        set(None);
        assert_eq!(sync_interval_from_env(), Ok(SyncInterval::DEFAULT));
        set(Some(""));
        assert_eq!(sync_interval_from_env(), Ok(SyncInterval::DEFAULT));
        set(Some("90"));
        assert_eq!(
            sync_interval_from_env().map(SyncInterval::ms),
            Ok(90 * 60_000)
        );
        set(Some("5"));
        let err = sync_interval_from_env().unwrap_err();
        assert!(
            err.starts_with("SYNC_INTERVAL_MINUTES: ") && err.contains("\"5\""),
            "{err}"
        );
        set(None);
        // SAFETY: as above; only this test reads or writes this one.
        unsafe { std::env::set_var("QUIET_SYNC_INTERVAL_MINUTES", "360") };
        assert_eq!(
            quiet_interval_from_env().map(SyncInterval::ms),
            Ok(360 * 60_000)
        );
        unsafe { std::env::remove_var("QUIET_SYNC_INTERVAL_MINUTES") };
        assert_eq!(quiet_interval_from_env(), Ok(SyncInterval::QUIET_DEFAULT));
    }
}
