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
        in_send_batch: false,
        unsure: false,
        uncounted: false,
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
