//! Tests of [`super`]: table-driven, one row per rule.

use super::*;
use crate::contact::EMPTY_HASH;
use crate::graph_error::GraphErrorKind;
use crate::identifiers::Platform;
use crate::leads::tests::{change, lead};
use crate::leads::{LeadChange, LeadState, Stage};
use crate::time::utc_day;

#[test]
fn event_ids_are_stable_and_per_event() {
    let a = event_id("lead-1", EventName::Lead);
    assert_eq!(a, sha256_hex("lead-1:Lead"));
    assert_eq!(a.len(), 64);
    assert_ne!(a, event_id("lead-1", EventName::Purchase));
    assert_ne!(a, event_id("lead-2", EventName::Lead));
    assert_eq!(
        sha256_hex(""),
        EMPTY_HASH,
        "the empty-string digest is what we leave out"
    );
}

#[test]
fn the_seed_table_row_by_row() {
    let map: BTreeMap<_, _> = [
        ("qualificado".to_owned(), EventName::QualifiedLead),
        ("agendado".to_owned(), EventName::Schedule),
        ("novo".to_owned(), EventName::Lead),
    ]
    .into();
    let on = true;
    let off_lead = false;
    let l = lead(None, 0);
    let ev = |lead: Option<&LeadState>, c: LeadChange<'_>, new: bool, px, meta| {
        events_for(&crate::leads::apply_change(lead, &c), new, px, meta, &map)
    };
    use EventName::*;
    // Purchase: a move to won with a value.
    assert_eq!(
        ev(
            Some(&l),
            change(1, Some(Stage::Won), Some(4599), None),
            false,
            on,
            true
        ),
        vec![Purchase]
    );
    // A won without a value sends nothing.
    assert!(
        ev(
            Some(&l),
            change(1, Some(Stage::Won), None, None),
            false,
            on,
            true
        )
        .is_empty()
    );
    // Lead: a new lead, only with sendLeadEvent.
    assert_eq!(
        ev(None, change(1, None, None, None), true, on, true),
        vec![Lead]
    );
    assert!(ev(None, change(1, None, None, None), true, off_lead, true).is_empty());
    // A column the map points at.
    assert_eq!(
        ev(
            Some(&l),
            change(1, None, None, Some("agendado")),
            false,
            off_lead,
            true
        ),
        vec![Schedule]
    );
    assert_eq!(
        ev(
            Some(&l),
            change(1, None, None, Some("qualificado")),
            false,
            off_lead,
            true
        ),
        vec![QualifiedLead]
    );
    // `qualified` alone sends nothing.
    assert!(
        ev(
            Some(&l),
            change(1, Some(Stage::Qualified), None, None),
            false,
            on,
            true
        )
        .is_empty()
    );
    // Lead both as a new lead and through a column: once.
    assert_eq!(
        ev(None, change(1, None, None, Some("novo")), true, on, true),
        vec![Lead]
    );
    // A sale moved into a mapped column: both.
    assert_eq!(
        ev(
            Some(&l),
            change(1, Some(Stage::Won), Some(10), Some("agendado")),
            false,
            on,
            true
        ),
        vec![Schedule, Purchase]
    );
    // Without contact data: nothing.
    assert!(
        ev(
            Some(&l),
            change(1, Some(Stage::Won), Some(10), None),
            false,
            on,
            false
        )
        .is_empty()
    );
    // A late move: nothing.
    let later = lead(None, 50);
    assert!(
        ev(
            Some(&later),
            change(1, Some(Stage::Won), Some(10), None),
            false,
            on,
            true
        )
        .is_empty()
    );
}

#[test]
fn the_send_schedule() {
    use AfterFailure::*;
    let now = 1_000_000;
    assert_eq!(
        after_failure(SendFailure::Unavailable, 1, false, now),
        RetryAt(now + MINUTE_MS)
    );
    assert_eq!(
        after_failure(SendFailure::Unexpected, 2, false, now),
        RetryAt(now + 10 * MINUTE_MS)
    );
    assert_eq!(after_failure(SendFailure::Unavailable, 3, false, now), Fail);
    // A row Meta may hold is never failed for attempts: it goes again
    // every ten minutes until Meta answers.
    for (failure, unsure) in [
        (SendFailure::Unanswered, false),
        (SendFailure::Unavailable, true),
        (SendFailure::Unexpected, true),
    ] {
        assert_eq!(
            after_failure(failure, 3, unsure, now),
            RetryAt(now + UNSURE_RETRY_MS),
            "{failure:?} unsure={unsure}"
        );
        assert_eq!(
            after_failure(failure, 9, unsure, now),
            RetryAt(now + UNSURE_RETRY_MS)
        );
    }
    assert_eq!(
        after_failure(SendFailure::Unanswered, 1, false, now),
        RetryAt(now + MINUTE_MS),
        "the schedule first"
    );
    for f in [
        SendFailure::Rejected,
        SendFailure::Permission,
        SendFailure::TokenInvalid,
    ] {
        assert_eq!(after_failure(f, 1, false, now), Fail, "{f:?}");
        assert_eq!(
            after_failure(f, 1, true, now),
            Fail,
            "Meta's refusal ends it"
        );
    }
    assert!(!too_old(now, MAX_EVENT_AGE_MS, now + MAX_EVENT_AGE_MS));
    assert!(too_old(now, MAX_EVENT_AGE_MS, now + MAX_EVENT_AGE_MS + 1));
    assert_eq!(utc_day(DAY_MS + 5), DAY_MS);
    assert_eq!(utc_day(-1), -DAY_MS);
}

/// A pending row of lead `l`'s `Lead` event, to build on.
pub(crate) fn row(attempts: i64, next: Option<i64>, lease: Option<i64>) -> Conversion {
    Conversion {
        site_id: "loja-x".into(),
        sk: "1#e".into(),
        event_id: "e".into(),
        event_name: EventName::Lead,
        lead_id: "l".into(),
        lead_key: "k".into(),
        event_time: 0,
        created_at: 0,
        status: ConversionStatus::Pending,
        attempts,
        next_attempt_at: next,
        lease_until: lease,
        value_cents: None,
        currency: None,
        sent_at: None,
        last_error: None,
        hashes: None,
        work_at: None,
        unsure: false,
        destination: None,
        action_source: None,
        source_url: None,
        order_id: None,
        platform: Platform::Meta,
    }
}

#[test]
fn a_claimed_row_waits_for_its_attempt_and_its_lease() {
    let now = 100_000;
    assert_eq!(wait_before_claim(&row(0, None, None), now), None);
    assert_eq!(wait_before_claim(&row(0, Some(now), Some(now)), now), None);
    assert_eq!(
        wait_before_claim(&row(1, Some(now + 5_000), None), now),
        Some(5_000)
    );
    assert_eq!(
        wait_before_claim(&row(1, Some(now), Some(now + 60_000)), now),
        Some(60_000),
        "the later of the two"
    );
    assert_eq!(
        wait_before_claim(&row(1, Some(now + 10), None), now),
        Some(1_000),
        "at least a second"
    );
}

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

#[test]
fn each_of_metas_answers_is_one_verdict() {
    use GraphErrorKind::*;
    fn failed(code: &str, j: Judged) -> bool {
        matches!(j, Judged::All(Verdict::Failed(e)) if e.starts_with(code))
    }
    assert_eq!(judge_error(Other, None, "bad", 10, None), Judged::Split);
    assert!(failed(
        "META_REJECTED",
        judge_error(Other, None, "bad", 1, None)
    ));
    assert!(failed(
        "PIXEL_UNAVAILABLE",
        judge_error(Other, Some(33), "no pixel", 10, None)
    ));
    let attempt = |j: Judged| match j {
        Judged::All(Verdict::Attempt(f, e)) => (f, e),
        other => panic!("{other:?}"),
    };
    let table = [
        (
            TokenInvalid,
            SendFailure::TokenInvalid,
            "META_TOKEN_INVALID: m",
        ),
        (
            Permission,
            SendFailure::Permission,
            "META_PERMISSION_MISSING: m",
        ),
        (Transient, SendFailure::Unavailable, "META_UNAVAILABLE: m"),
        (TooMuchData, SendFailure::Unavailable, "META_UNAVAILABLE: m"),
    ];
    for (kind, failure, error) in table {
        assert_eq!(
            attempt(judge_error(kind, None, "m", 5, None)),
            (failure, error.to_owned()),
            "{kind:?}"
        );
    }
    // A throttle waits for Meta's regain time when it is later than the
    // schedule's, never past the event's 7 days.
    let throttled = |regain| match judge_error(Throttled, None, "m", 5, regain) {
        Judged::All(v @ Verdict::Throttled { .. }) => v,
        other => panic!("{other:?}"),
    };
    let at = |v: Verdict| match end_of(v, 1, false, 0) {
        SendEnd::Retry { at, last_error, .. } => {
            assert_eq!(last_error, "META_UNAVAILABLE: Meta throttled the send");
            at
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(at(throttled(None)), MINUTE_MS);
    assert_eq!(at(throttled(Some(1_000))), MINUTE_MS);
    assert_eq!(at(throttled(Some(60 * MINUTE_MS))), 60 * MINUTE_MS);
    assert_eq!(at(throttled(Some(i64::MAX))), MAX_EVENT_AGE_MS);
    assert!(matches!(
        end_of(throttled(Some(60 * MINUTE_MS)), 3, false, 0),
        SendEnd::Failed { .. }
    ));
    assert_eq!(judge_receipt(5, 5), Verdict::Sent);
    for short in [
        judge_receipt(4, 5),
        judge_receipt(-1, 5),
        judge_receipt(6, 5),
    ] {
        assert!(
            matches!(&short, Verdict::Attempt(SendFailure::Unavailable, e) if e.starts_with("META_UNAVAILABLE: Meta received")),
            "{short:?}"
        );
    }
    let now = 1_000;
    assert_eq!(end_of(Verdict::Sent, 1, false, now), SendEnd::Sent);
    assert_eq!(end_of(Verdict::NotSent, 1, false, now), SendEnd::Released);
    assert_eq!(
        end_of(
            Verdict::Attempt(SendFailure::Unavailable, "x".into()),
            1,
            false,
            now
        ),
        SendEnd::Retry {
            at: now + MINUTE_MS,
            last_error: "x".into(),
            unsure: false,
        }
    );
    assert_eq!(
        end_of(judge_unanswered("timed out"), 3, false, now),
        SendEnd::Retry {
            at: now + UNSURE_RETRY_MS,
            last_error: "META_UNAVAILABLE: timed out".into(),
            unsure: true,
        },
        "an unanswered third attempt goes again, marked"
    );
    assert_eq!(
        end_of(
            Verdict::Attempt(SendFailure::Unavailable, "x".into()),
            3,
            false,
            now
        ),
        SendEnd::Failed {
            last_error: "x".into()
        }
    );
    assert_eq!(
        end_of(
            Verdict::Attempt(SendFailure::Permission, "x".into()),
            1,
            false,
            now
        ),
        SendEnd::Failed {
            last_error: "x".into()
        }
    );
}
