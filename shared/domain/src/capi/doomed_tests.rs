//! What can no longer be sent: too old for its platform, out of attempts,
//! without contact data.

use super::tests::row;
use super::*;
use crate::contact::ContactHashes;
use crate::identifiers::Platform;
use crate::time::DAY_MS;

/// A row of `event_time` with or without contact data, for `doomed`.
fn doomed_row(event_time: i64, hashes: bool) -> Conversion {
    Conversion {
        event_time,
        hashes: hashes.then(|| ContactHashes {
            ph: vec!["h".into()],
            ..ContactHashes::default()
        }),
        ..row(0, None, None)
    }
}

#[test]
fn doomed_rows_are_too_old_out_of_attempts_or_without_contact_data() {
    let now = 100 * DAY_MS;
    let ok = |t, a, h| doomed(&doomed_row(t, h), a, false, now);
    assert_eq!(ok(now, 1, true), None);
    assert_eq!(ok(now, MAX_ATTEMPTS, true), None, "the third attempt goes");
    let code = |v: Option<String>| v.map(|e| e.split(':').next().unwrap_or_default().to_owned());
    assert_eq!(
        code(ok(now - MAX_EVENT_AGE_MS - 1, 1, true)).as_deref(),
        Some("EVENT_TOO_OLD")
    );
    assert_eq!(
        code(ok(now, MAX_ATTEMPTS + 1, true)).as_deref(),
        Some("UNEXPECTED")
    );
    assert_eq!(code(ok(now, 1, false)).as_deref(), Some("UNEXPECTED"));
    assert!(
        ok(now - MAX_EVENT_AGE_MS - 1, MAX_ATTEMPTS + 1, true)
            .is_some_and(|e| e.starts_with("EVENT_TOO_OLD")),
        "too old wins"
    );
    // A lost attempt that may have reached Meta does not doom the row;
    // the 7-day limit still does.
    let fresh = doomed_row(now, true);
    assert_eq!(doomed(&fresh, MAX_ATTEMPTS + 1, true, now), None);
    let old = doomed_row(now - MAX_EVENT_AGE_MS - 1, true);
    assert!(doomed(&old, 1, true, now).is_some());
    // A Lead Ads lead's row is matched on its lead id: no contact needed.
    let form = Conversion {
        lead_key: "meta-lead:444444444444444".into(),
        ..doomed_row(now, false)
    };
    assert_eq!(doomed(&form, 1, false, now), None);
}

#[test]
fn each_platform_has_its_own_event_age() {
    let now = 100 * DAY_MS;
    let aged = |days: i64, platform: Platform, source: Option<&str>| {
        let c = Conversion {
            platform,
            action_source: source.map(str::to_owned),
            ..doomed_row(now - days * DAY_MS - 1, true)
        };
        doomed(&c, 1, false, now)
    };
    use Platform::*;
    // Meta: 7 days; a physical store's sale 62.
    assert!(aged(7, Meta, Some("website")).is_some());
    assert!(aged(6, Meta, Some("website")).is_none());
    assert!(aged(61, Meta, Some("physical_store")).is_none());
    assert_eq!(
        aged(62, Meta, Some("physical_store")).as_deref(),
        Some("EVENT_TOO_OLD: the event is older than 62 days, the most Meta takes")
    );
    // Google: up to 90 days; its conversion action's window is Google's
    // to judge.
    assert!(aged(89, Google, Some("website")).is_none());
    assert!(aged(90, Google, None).is_some());
    // TikTok, Pinterest and Snap: 7 days, whatever the source.
    for p in [TikTok, Pinterest, Snap] {
        assert!(aged(6, p, Some("physical_store")).is_none(), "{p:?}");
        assert!(aged(7, p, Some("physical_store")).is_some(), "{p:?}");
    }
}
