//! The Conversions API's rules, without I/O: the leads vocabulary, the
//! board and its event map, the hashed contact data (`meta`), which events
//! a lead change queues, each event's id, and the send schedule (three
//! attempts, 1 then 10 minutes apart, a 15-minute lease, a 7-day cap).
//!
//! The store writes what these functions decide; the API and the
//! `capi-sender` Lambda call them, so every row of the seed's table is a
//! unit test here.

use std::collections::BTreeMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ids::{IdError, check_opaque};
use crate::time::{DAY_MS, MINUTE_MS};

/// The events a site's pixel receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventName {
    Lead,
    QualifiedLead,
    Schedule,
    Purchase,
}

impl EventName {
    pub const ALL: [EventName; 4] = [
        EventName::Lead,
        EventName::QualifiedLead,
        EventName::Schedule,
        EventName::Purchase,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::Lead => "Lead",
            EventName::QualifiedLead => "QualifiedLead",
            EventName::Schedule => "Schedule",
            EventName::Purchase => "Purchase",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == value)
    }

    /// The events a board column may send (`Purchase` comes only from a
    /// recorded sale).
    pub fn parse_column_event(value: &str) -> Option<Self> {
        Self::parse(value).filter(|e| *e != EventName::Purchase)
    }
}

/// `sha256(leadId + ":" + eventName)`, lowercase hex: the same event of the
/// same lead always has the same id, which is what Meta deduplicates on.
pub fn event_id(lead_id: &str, event: EventName) -> String {
    sha256_hex(&format!("{lead_id}:{}", event.as_str()))
}

/// Lowercase hex SHA-256 of a text.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The SHA-256 of the empty string: it matches nobody and is left out.
const EMPTY_HASH: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// The most phone hashes one lead carries.
pub const MAX_PHONES: usize = 10;

/// What the host knows of a contact, every value a SHA-256 digest. Its
/// `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct ContactHashes {
    pub ph: Vec<String>,
    pub external_id: Option<String>,
}

impl std::fmt::Debug for ContactHashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ContactHashes({} phones, external id: {})",
            self.ph.len(),
            self.external_id.is_some()
        )
    }
}

fn is_digest(v: &str) -> bool {
    v.len() == 64 && v.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why `meta` was ignored: a reason that never repeats the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaIgnored {
    NotAnObject,
    UnknownField,
    BadPhones,
    BadExternalId,
    NothingToMatch,
}

/// Reads `meta`: `{ph: [64 lowercase hex] (≤ 10), externalId?: 64
/// lowercase hex}`. Anything else is ignored as a whole (`Err` says why,
/// without the value). Hashes of the empty string are left out; `meta` with
/// nothing left to match is ignored too.
pub fn parse_meta(value: &Value) -> Result<ContactHashes, MetaIgnored> {
    let Value::Object(map) = value else {
        return Err(MetaIgnored::NotAnObject);
    };
    if map.keys().any(|k| k != "ph" && k != "externalId") {
        return Err(MetaIgnored::UnknownField);
    }
    let ph = match map.get("ph") {
        None => vec![],
        Some(Value::Array(items)) if items.len() <= MAX_PHONES => items
            .iter()
            .map(|v| v.as_str().filter(|s| is_digest(s)).map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or(MetaIgnored::BadPhones)?,
        Some(_) => return Err(MetaIgnored::BadPhones),
    };
    let external_id = match map.get("externalId") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if is_digest(s) => Some(s.clone()),
        Some(_) => return Err(MetaIgnored::BadExternalId),
    };
    let mut ph: Vec<String> = ph.into_iter().filter(|h| h != EMPTY_HASH).collect();
    ph.dedup();
    let external_id = external_id.filter(|h| h != EMPTY_HASH);
    if ph.is_empty() && external_id.is_none() {
        return Err(MetaIgnored::NothingToMatch);
    }
    Ok(ContactHashes { ph, external_id })
}

/// A lead's stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Open,
    Qualified,
    Won,
    Lost,
}

impl Stage {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "open" => Some(Stage::Open),
            "qualified" => Some(Stage::Qualified),
            "won" => Some(Stage::Won),
            "lost" => Some(Stage::Lost),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Open => "open",
            Stage::Qualified => "qualified",
            Stage::Won => "won",
            Stage::Lost => "lost",
        }
    }
}

/// Checks an `origin`: 1–32 of `a-z0-9_`.
pub fn check_origin(value: &str) -> Result<(), IdError> {
    if value.is_empty()
        || value.len() > 32
        || !value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(IdError::new(
            "origin",
            "must be 1 to 32 of lowercase letters, digits and _",
        ));
    }
    Ok(())
}

/// Paid origins carry the ad that brought the lead.
pub fn is_paid(origin: &str) -> bool {
    matches!(origin, "ctwa_ad" | "lead_form")
}

/// The most columns a board has.
pub const MAX_COLUMNS: usize = 40;
const MAX_COLUMN_TEXT: usize = 100;

/// A column of the host's board.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Column {
    pub key: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
}

/// Why a board cannot be declared; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoardError {
    #[error("{0}")]
    Invalid(String),
    #[error("columns: at most {MAX_COLUMNS} columns")]
    TooMany,
}

fn check_text(field: &str, value: &str) -> Result<(), BoardError> {
    crate::ids::check_plain_text(value, MAX_COLUMN_TEXT)
        .map_err(|why| BoardError::Invalid(format!("{field}: {why}")))
}

/// Checks a declared board: at most 40 columns, unique keys, names, and
/// `#rgb`/`#rrggbb` colours.
pub fn check_board(columns: &[Column]) -> Result<(), BoardError> {
    if columns.len() > MAX_COLUMNS {
        return Err(BoardError::TooMany);
    }
    let mut seen = std::collections::HashSet::new();
    for (i, c) in columns.iter().enumerate() {
        check_opaque(&format!("columns[{i}].key"), &c.key)
            .map_err(|e| BoardError::Invalid(e.to_string()))?;
        if !seen.insert(c.key.as_str()) {
            return Err(BoardError::Invalid(format!(
                "columns[{i}].key: declared twice"
            )));
        }
        check_text(&format!("columns[{i}].name"), &c.name)?;
        if let Some(g) = &c.group {
            check_text(&format!("columns[{i}].group"), g)?;
        }
        if let Some(color) = &c.color {
            let hex = color.strip_prefix('#').unwrap_or("");
            if !matches!(hex.len(), 3 | 6) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(BoardError::Invalid(format!(
                    "columns[{i}].color: must be #rgb or #rrggbb"
                )));
            }
        }
    }
    Ok(())
}

/// The event map after the board is declared again: a column that is gone
/// leaves it, one that stays keeps its event.
pub fn keep_mapped(
    map: &BTreeMap<String, EventName>,
    columns: &[Column],
) -> BTreeMap<String, EventName> {
    map.iter()
        .filter(|(k, _)| columns.iter().any(|c| &c.key == *k))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// A lead as the rules need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadState {
    pub column: Option<String>,
    pub stage: Stage,
    /// When the last accepted move happened (the host's `occurredAt`).
    pub last_move_at: i64,
}

/// One change the host sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadChange<'a> {
    pub occurred_at: i64,
    pub stage: Option<Stage>,
    pub revenue_cents: Option<i64>,
    /// A column the board declares (an undeclared one was dropped before).
    pub column: Option<&'a str>,
}

/// What a change does to a lead.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Applied {
    /// The change moves the lead (its time is not before the last move).
    pub accepted: bool,
    /// The column the lead enters, if it moves into another one.
    pub entered: Option<String>,
    pub stage: Option<Stage>,
    /// A sale: a move to `won` with a value.
    pub sale_cents: Option<i64>,
}

/// Applies a change to a lead (`None`: the change records it). A move
/// older than the lead's last move changes nothing, so a late retry never
/// moves a lead back; a move into the column the lead is in enters nothing.
pub fn apply_change(lead: Option<&LeadState>, change: &LeadChange<'_>) -> Applied {
    if let Some(l) = lead
        && change.occurred_at < l.last_move_at
    {
        return Applied::default();
    }
    let current = lead.and_then(|l| l.column.as_deref());
    let entered = change
        .column
        .filter(|c| Some(*c) != current)
        .map(str::to_owned);
    let sale_cents = match (change.stage, change.revenue_cents) {
        (Some(Stage::Won), Some(v)) if v > 0 => Some(v),
        _ => None,
    };
    Applied {
        accepted: true,
        entered,
        stage: change.stage,
        sale_cents,
    }
}

/// Whether a site can send now: an enabled pixel whose token Meta has not
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelReady {
    pub send_lead_event: bool,
}

/// The events a change queues (before the once-per-lead check): the
/// seed's table. Nothing without `meta` or a ready pixel.
pub fn events_for(
    applied: &Applied,
    is_new_lead: bool,
    pixel: Option<PixelReady>,
    has_meta: bool,
    map: &BTreeMap<String, EventName>,
) -> Vec<EventName> {
    let Some(pixel) = pixel else {
        return vec![];
    };
    if !has_meta || !applied.accepted {
        return vec![];
    }
    let mut events = vec![];
    if is_new_lead && pixel.send_lead_event {
        events.push(EventName::Lead);
    }
    if let Some(event) = applied.entered.as_ref().and_then(|c| map.get(c)) {
        events.push(*event);
    }
    if applied.sale_cents.is_some() {
        events.push(EventName::Purchase);
    }
    events.sort();
    events.dedup();
    events
}

/// Attempts a conversion gets in all.
pub const MAX_ATTEMPTS: i64 = 3;
/// How long a send holds its attempt: a duplicate delivery or a second
/// sender never sends the event meanwhile.
pub const SEND_LEASE_MS: i64 = 15 * MINUTE_MS;
/// A pending attempt this late was lost on the way; the sweeper sends it
/// again.
pub const LOST_AFTER_MS: i64 = 15 * MINUTE_MS;
/// Meta refuses events older than this.
pub const MAX_EVENT_AGE_MS: i64 = 7 * DAY_MS;
/// The most events one `POST /{pixel}/events` carries.
pub const MAX_EVENTS_PER_REQUEST: usize = 1_000;

/// The wait before the next attempt after `attempts` failed ones: 1 minute,
/// then 10; `None` when none is left.
pub fn retry_delay_ms(attempts: i64) -> Option<i64> {
    match attempts {
        1 => Some(MINUTE_MS),
        2 => Some(10 * MINUTE_MS),
        _ => None,
    }
}

/// Why a send did not go through, as the rules sort it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendFailure {
    /// Meta called the event invalid.
    Rejected,
    Permission,
    TokenInvalid,
    /// Meta failed or throttled.
    Unavailable,
    /// Not an answer from Meta: the key, the store, a bug.
    Unexpected,
}

impl SendFailure {
    pub fn code(self) -> &'static str {
        match self {
            SendFailure::Rejected => "META_REJECTED",
            SendFailure::Permission => "META_PERMISSION_MISSING",
            SendFailure::TokenInvalid => "META_TOKEN_INVALID",
            SendFailure::Unavailable => "META_UNAVAILABLE",
            SendFailure::Unexpected => "UNEXPECTED",
        }
    }
    /// Failures no retry can mend.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SendFailure::Rejected | SendFailure::Permission | SendFailure::TokenInvalid
        )
    }
}

/// What becomes of a conversion after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    RetryAt(i64),
    Fail,
}

/// Decides after the `attempts`-th attempt failed at `now`.
pub fn after_failure(failure: SendFailure, attempts: i64, now: i64) -> AfterFailure {
    if failure.is_final() {
        return AfterFailure::Fail;
    }
    match retry_delay_ms(attempts) {
        Some(delay) => AfterFailure::RetryAt(now + delay),
        None => AfterFailure::Fail,
    }
}

/// An event is too old to send once Meta would refuse its time.
pub fn too_old(event_time: i64, now: i64) -> bool {
    now - event_time > MAX_EVENT_AGE_MS
}

/// The UTC day (its start, epoch ms) an instant falls on.
pub fn utc_day(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS) * DAY_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const H: &str = "5f2b8b0f3c6a4e1e9d7c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e";

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
    fn meta_takes_the_one_shape_and_ignores_anything_else_whole() {
        let ok = parse_meta(&json!({"ph": [H], "externalId": H})).unwrap();
        assert_eq!(ok.ph, vec![H.to_owned()]);
        assert!(!format!("{ok:?}").contains(H), "Debug never shows a hash");
        assert!(parse_meta(&json!({"externalId": H})).is_ok());
        let cases = [
            (json!("5511999991234"), MetaIgnored::NotAnObject),
            (json!({"ph": ["5511999991234"]}), MetaIgnored::BadPhones),
            (json!({"ph": [H.to_uppercase()]}), MetaIgnored::BadPhones),
            (json!({"ph": H}), MetaIgnored::BadPhones),
            (json!({"ph": vec![H; 11]}), MetaIgnored::BadPhones),
            (
                json!({"ph": [H], "externalId": 5}),
                MetaIgnored::BadExternalId,
            ),
            (json!({"ph": [H], "email": H}), MetaIgnored::UnknownField),
            (json!({"ph": [EMPTY_HASH]}), MetaIgnored::NothingToMatch),
            (json!({}), MetaIgnored::NothingToMatch),
        ];
        for (value, why) in cases {
            assert_eq!(parse_meta(&value), Err(why), "{value}");
        }
        let dropped = parse_meta(&json!({"ph": [EMPTY_HASH, H]})).unwrap();
        assert_eq!(dropped.ph, vec![H.to_owned()]);
    }

    fn col(key: &str) -> Column {
        Column {
            key: key.into(),
            name: key.to_uppercase(),
            group: None,
            color: None,
        }
    }

    #[test]
    fn boards_are_checked_and_a_redeclared_board_keeps_what_stays() {
        assert!(check_board(&[col("novo"), col("agendado")]).is_ok());
        let many: Vec<Column> = (0..41).map(|i| col(&format!("c{i}"))).collect();
        assert_eq!(check_board(&many), Err(BoardError::TooMany));
        assert!(check_board(&many[..40]).is_ok());
        assert!(check_board(&[col("a"), col("a")]).is_err());
        let mut bad = col("a");
        bad.name = "Novo\u{200B}".into();
        assert!(check_board(&[bad]).is_err());
        let mut colored = col("a");
        colored.color = Some("#f97316".into());
        assert!(check_board(std::slice::from_ref(&colored)).is_ok());
        colored.color = Some("orange".into());
        assert!(check_board(&[colored]).is_err());
        let map: BTreeMap<_, _> = [
            ("novo".to_owned(), EventName::Lead),
            ("agendado".to_owned(), EventName::Schedule),
        ]
        .into();
        let kept = keep_mapped(&map, &[col("agendado"), col("fechado")]);
        assert_eq!(kept, [("agendado".to_owned(), EventName::Schedule)].into());
    }

    fn lead(column: Option<&str>, at: i64) -> LeadState {
        LeadState {
            column: column.map(str::to_owned),
            stage: Stage::Open,
            last_move_at: at,
        }
    }

    fn change(
        at: i64,
        stage: Option<Stage>,
        cents: Option<i64>,
        column: Option<&str>,
    ) -> LeadChange<'_> {
        LeadChange {
            occurred_at: at,
            stage,
            revenue_cents: cents,
            column,
        }
    }

    #[test]
    fn moves_older_than_the_last_or_into_the_same_column_change_nothing() {
        let l = lead(Some("novo"), 100);
        assert!(!apply_change(Some(&l), &change(99, None, None, Some("agendado"))).accepted);
        let same = apply_change(Some(&l), &change(101, None, None, Some("novo")));
        assert!(same.accepted);
        assert_eq!(same.entered, None);
        let moved = apply_change(Some(&l), &change(100, None, None, Some("agendado")));
        assert_eq!(moved.entered.as_deref(), Some("agendado"));
        let new = apply_change(None, &change(5, None, None, Some("novo")));
        assert_eq!(new.entered.as_deref(), Some("novo"));
    }

    #[test]
    fn the_seed_table_row_by_row() {
        let map: BTreeMap<_, _> = [
            ("qualificado".to_owned(), EventName::QualifiedLead),
            ("agendado".to_owned(), EventName::Schedule),
            ("novo".to_owned(), EventName::Lead),
        ]
        .into();
        let on = Some(PixelReady {
            send_lead_event: true,
        });
        let off_lead = Some(PixelReady {
            send_lead_event: false,
        });
        let l = lead(None, 0);
        let ev = |lead: Option<&LeadState>, c: LeadChange<'_>, new: bool, px, meta| {
            events_for(&apply_change(lead, &c), new, px, meta, &map)
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
        // Without meta, without a pixel: nothing.
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
        assert!(
            ev(
                Some(&l),
                change(1, Some(Stage::Won), Some(10), None),
                false,
                None,
                true
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
            after_failure(SendFailure::Unavailable, 1, now),
            RetryAt(now + MINUTE_MS)
        );
        assert_eq!(
            after_failure(SendFailure::Unexpected, 2, now),
            RetryAt(now + 10 * MINUTE_MS)
        );
        assert_eq!(after_failure(SendFailure::Unavailable, 3, now), Fail);
        for f in [
            SendFailure::Rejected,
            SendFailure::Permission,
            SendFailure::TokenInvalid,
        ] {
            assert_eq!(after_failure(f, 1, now), Fail, "{f:?}");
        }
        assert!(!too_old(now, now + MAX_EVENT_AGE_MS));
        assert!(too_old(now, now + MAX_EVENT_AGE_MS + 1));
        assert_eq!(utc_day(DAY_MS + 5), DAY_MS);
        assert_eq!(utc_day(-1), -DAY_MS);
    }
}
