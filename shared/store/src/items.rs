//! Every entity's item, declared once: one struct per entity with its
//! attribute names, mapped to and from DynamoDB by `serde_dynamo`, and
//! converted to and from the domain's type. A missing attribute is an error
//! ([`StoreError::Malformed`]), not a silent default; an optional one is an
//! `Option`. The few `#[serde(default)]`s are flags and counters whose
//! absence means `false` or `0` (they are added by `ADD`, or came later).
//!
//! Keys and index attributes (`pk`, `sk`, `gsi1pk`, …) are built by
//! `keys.rs`; an item struct carries them only where the store writes the
//! whole item.

use std::collections::BTreeMap;

use adtrail_domain::board::{Board, Column};
use adtrail_domain::capi::{Conversion, ConversionStatus, EventName};
use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::leads::{Lead, NewConversion, Stage};
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::outcome::SyncState;
use adtrail_domain::pixels::{ConnectionStatus, PixelSource, SitePixel};
use adtrail_domain::spend::SpendFigures;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::attr::Item;
use crate::connections::{Connection, ListedAccount, ListedPixel};
use crate::error::StoreError;
use crate::sites::Site;

/// Reads an item as `T`. The error names the entity and, for a missing
/// attribute, the attribute; never a value (items hold hashes and sealed
/// tokens).
pub(crate) fn decode<T: DeserializeOwned>(item: &Item, entity: &str) -> Result<T, StoreError> {
    serde_dynamo::from_item(item.clone()).map_err(|e| {
        let text = e.to_string();
        let why = match text.strip_prefix("missing field ") {
            Some(field) => format!("{entity}: missing {field}"),
            None => format!("{entity}: an attribute is of another type"),
        };
        StoreError::Malformed(why)
    })
}

/// Writes `T` as an item.
pub(crate) fn encode<T: Serialize>(value: &T, entity: &str) -> Result<Item, StoreError> {
    serde_dynamo::to_item(value)
        .map_err(|_| StoreError::Malformed(format!("{entity}: could not be written")))
}

/// A small JSON document kept in one string attribute (a listing, a board,
/// the lead's references), so one read brings it whole.
mod json_text {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        serde_json::to_string(value)
            .map_err(S::Error::custom)?
            .serialize(s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<T, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text).map_err(D::Error::custom)
    }
}

/// `json_text` for an optional attribute.
mod json_text_opt {
    use serde::de::DeserializeOwned;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => super::json_text::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        #[derive(Deserialize)]
        struct Text(#[serde(with = "super::json_text")] serde_json::Value);
        match Option::<Text>::deserialize(d)? {
            None => Ok(None),
            Some(Text(v)) => serde_json::from_value(v)
                .map(Some)
                .map_err(serde::de::Error::custom),
        }
    }
}

fn parse<T>(value: Option<T>, entity: &str, attribute: &str) -> Result<T, StoreError> {
    value.ok_or_else(|| StoreError::Malformed(format!("{entity}: unknown {attribute}")))
}

/// `site#<siteId>` / `site`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SiteItem {
    site_id: String,
    name: String,
    currency: String,
    country: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl From<SiteItem> for Site {
    fn from(i: SiteItem) -> Self {
        Site {
            site_id: i.site_id,
            name: i.name,
            currency: i.currency,
            country: i.country,
            created_at: i.created_at,
            updated_at: i.updated_at,
        }
    }
}

/// `site#<siteId>` / `link#<adAccountId>`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LinkItem {
    site_id: String,
    ad_account_id: String,
    owner_key: String,
    name: String,
    currency: String,
    timezone: String,
    sync_state: String,
    last_sync_at: Option<i64>,
    last_daily_resync_at: Option<i64>,
    last_full_resync_at: Option<i64>,
    backfill_from: Option<String>,
    #[serde(default)]
    failures: i64,
    last_error: Option<String>,
    run_id: Option<String>,
    #[serde(default)]
    sync_requested: bool,
    next_sync_at: Option<i64>,
    created_at: i64,
}

impl TryFrom<LinkItem> for SiteAdAccount {
    type Error = StoreError;
    fn try_from(i: LinkItem) -> Result<Self, StoreError> {
        Ok(SiteAdAccount {
            sync_state: parse(SyncState::parse(&i.sync_state), "link", "syncState")?,
            site_id: i.site_id,
            ad_account_id: i.ad_account_id,
            owner_key: i.owner_key,
            name: i.name,
            currency: i.currency,
            timezone: i.timezone,
            last_sync_at: i.last_sync_at,
            last_daily_resync_at: i.last_daily_resync_at,
            last_full_resync_at: i.last_full_resync_at,
            backfill_from: i.backfill_from,
            failures: i.failures.clamp(0, 1_000) as u32,
            last_error: i.last_error,
            run_id: i.run_id,
            sync_requested: i.sync_requested,
            next_sync_at: i.next_sync_at,
            created_at: i.created_at,
        })
    }
}

/// `owner#<ownerKey>` / `connection`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionItem {
    owner_key: String,
    status: String,
    #[serde(with = "serde_bytes")]
    sealed_token: Vec<u8>,
    token_version: String,
    #[serde(with = "json_text")]
    accounts: Vec<ListedAccount>,
    #[serde(default, with = "json_text_opt")]
    pixels: Option<Vec<ListedPixel>>,
    invalid_since: Option<i64>,
    last_error: Option<String>,
    #[serde(default)]
    link_count: i64,
    authorized_by_id: Option<String>,
    authorized_by_name: Option<String>,
    authorized_at: Option<i64>,
    expires_at: Option<i64>,
    #[serde(default)]
    expiring_soon: bool,
    created_at: i64,
    updated_at: i64,
}

impl TryFrom<ConnectionItem> for Connection {
    type Error = StoreError;
    fn try_from(i: ConnectionItem) -> Result<Self, StoreError> {
        let status = match i.status.as_str() {
            "active" => ConnectionStatus::Active,
            "invalid" => ConnectionStatus::Invalid,
            _ => return Err(StoreError::Malformed("connection: unknown status".into())),
        };
        Ok(Connection {
            owner_key: i.owner_key,
            status,
            sealed_token: i.sealed_token,
            token_version: i.token_version,
            accounts: i.accounts,
            pixels: i.pixels.unwrap_or_default(),
            invalid_since: i.invalid_since,
            last_error: i.last_error,
            link_count: i.link_count,
            authorized_by: i
                .authorized_by_id
                .map(|id| (id, i.authorized_by_name.unwrap_or_default())),
            authorized_at: i.authorized_at,
            expires_at: i.expires_at,
            expiring_soon: i.expiring_soon,
            created_at: i.created_at,
            updated_at: i.updated_at,
        })
    }
}

/// `site#<siteId>` / `pixel`: written whole.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PixelItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    pixel_id: String,
    name: String,
    /// `connection` or `token`.
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "serde_bytes")]
    sealed_token: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    set_by: Option<String>,
    enabled: bool,
    send_lead_event: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    test_event_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    #[serde(default)]
    stopped: bool,
    #[serde(default)]
    not_granted: bool,
    updated_at: i64,
    /// The `owner` index: the pixels an owner set, to forget them with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gsi1pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gsi1sk: Option<String>,
}

impl PixelItem {
    /// The item of `pixel` under its keys (`gsi` when an owner set it).
    pub(crate) fn of(p: &SitePixel, pk: String, sk: String, gsi: Option<(String, String)>) -> Self {
        let (owner_key, sealed_token, token_version, set_by) = match &p.source {
            PixelSource::Connection { owner_key } => (Some(owner_key.clone()), None, None, None),
            PixelSource::Token {
                sealed_token,
                token_version,
                set_by,
            } => (
                None,
                Some(sealed_token.clone()),
                Some(token_version.clone()),
                set_by.clone(),
            ),
        };
        let (gsi1pk, gsi1sk) = gsi.unzip();
        PixelItem {
            pk,
            sk,
            site_id: p.site_id.clone(),
            pixel_id: p.pixel_id.clone(),
            name: p.name.clone(),
            source: p.source_name().to_owned(),
            owner_key,
            sealed_token,
            token_version,
            set_by,
            enabled: p.enabled,
            send_lead_event: p.send_lead_event,
            test_event_code: p.test_event_code.clone(),
            last_error: p.last_error.clone(),
            stopped: p.stopped,
            not_granted: p.not_granted,
            updated_at: p.updated_at,
            gsi1pk,
            gsi1sk,
        }
    }
}

impl TryFrom<PixelItem> for SitePixel {
    type Error = StoreError;
    fn try_from(i: PixelItem) -> Result<Self, StoreError> {
        let source = match (i.source.as_str(), i.owner_key) {
            ("token", _) => PixelSource::Token {
                sealed_token: i.sealed_token.unwrap_or_default(),
                token_version: i.token_version.unwrap_or_default(),
                set_by: i.set_by,
            },
            ("connection", Some(owner_key)) => PixelSource::Connection { owner_key },
            _ => return Err(StoreError::Malformed("pixel: unknown source".into())),
        };
        Ok(SitePixel {
            site_id: i.site_id,
            pixel_id: i.pixel_id,
            name: i.name,
            source,
            enabled: i.enabled,
            send_lead_event: i.send_lead_event,
            test_event_code: i.test_event_code,
            last_error: i.last_error,
            stopped: i.stopped,
            not_granted: i.not_granted,
            updated_at: i.updated_at,
        })
    }
}

/// `site#<siteId>` / `board`: written whole, over its version.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BoardItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_text_opt"
    )]
    columns: Option<Vec<Column>>,
    /// Column → event name.
    #[serde(with = "json_text")]
    event_map: BTreeMap<String, String>,
    #[serde(default)]
    send_lead_event: bool,
    version: i64,
    updated_at: i64,
}

impl BoardItem {
    /// The item of `board`, one version past the one it was read at.
    pub(crate) fn of(board: &Board, pk: String, sk: String, now: i64) -> Self {
        BoardItem {
            pk,
            sk,
            columns: board.columns.clone(),
            event_map: board
                .map
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().to_owned()))
                .collect(),
            send_lead_event: board.send_lead_event,
            version: board.version + 1,
            updated_at: now,
        }
    }
}

impl From<BoardItem> for Board {
    fn from(i: BoardItem) -> Self {
        Board {
            columns: i.columns,
            // An event a column may no longer send is left out.
            map: i
                .event_map
                .into_iter()
                .filter_map(|(k, v)| Some((k, EventName::parse_column_event(&v)?)))
                .collect(),
            send_lead_event: i.send_lead_event,
            version: i.version,
        }
    }
}

/// `lead#<siteId>` / `<leadKey>`: written whole, over its version.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeadItem {
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    lead_key: String,
    lead_id: String,
    origin: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ad_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    column: Option<String>,
    stage: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revenue_cents: Option<i64>,
    created_at: i64,
    cohort_day: i64,
    last_move_at: i64,
    /// Event name → the conversion's reference.
    #[serde(with = "json_text")]
    conversions: BTreeMap<String, String>,
    /// `(column, dayStart)` entries it counts in.
    #[serde(with = "json_text")]
    entries: Vec<(String, i64)>,
    version: i64,
    updated_at: i64,
}

impl LeadItem {
    /// The item of `lead`, one version past the one it was read at.
    pub(crate) fn of(lead: &Lead, pk: String, now: i64) -> Self {
        LeadItem {
            pk,
            sk: lead.lead_key.clone(),
            site_id: lead.site_id.clone(),
            lead_key: lead.lead_key.clone(),
            lead_id: lead.lead_id.clone(),
            origin: lead.origin.clone(),
            ad_id: lead.ad_id.clone(),
            label: lead.label.clone(),
            column: lead.column.clone(),
            stage: lead.stage.as_str().to_owned(),
            revenue_cents: lead.revenue_cents,
            created_at: lead.created_at,
            cohort_day: lead.cohort_day,
            last_move_at: lead.last_move_at,
            conversions: lead
                .conversions
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                .collect(),
            entries: lead.entries.clone(),
            version: lead.version + 1,
            updated_at: now,
        }
    }
}

impl TryFrom<LeadItem> for Lead {
    type Error = StoreError;
    fn try_from(i: LeadItem) -> Result<Self, StoreError> {
        Ok(Lead {
            stage: parse(Stage::parse(&i.stage), "lead", "stage")?,
            site_id: i.site_id,
            lead_key: i.lead_key,
            lead_id: i.lead_id,
            origin: i.origin,
            ad_id: i.ad_id,
            label: i.label,
            column: i.column,
            revenue_cents: i.revenue_cents,
            created_at: i.created_at,
            cohort_day: i.cohort_day,
            last_move_at: i.last_move_at,
            conversions: i
                .conversions
                .into_iter()
                .map(|(k, v)| Ok((parse(EventName::parse(&k), "lead", "conversion event")?, v)))
                .collect::<Result<_, StoreError>>()?,
            entries: i.entries,
            version: i.version,
        })
    }
}

/// `conv#<siteId>` / `<createdAt>#<eventId>`. Its writes are updates of
/// a few attributes, save the outbox's, which puts it whole.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionItem {
    #[serde(default, skip_deserializing)]
    pub(crate) pk: String,
    pub(crate) sk: String,
    site_id: String,
    event_id: String,
    event_name: String,
    lead_id: String,
    lead_key: String,
    event_time: i64,
    created_at: i64,
    status: String,
    attempts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_cents: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sent_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_error: Option<String>,
    /// Hashed phones: a string set, erased when delivery ends (an empty
    /// set cannot be stored).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "serde_dynamo::string_set"
    )]
    ph: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    external_id: Option<String>,
    /// The `work` index: the shard and the time its attempt is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) work_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    work_at: Option<i64>,
}

impl ConversionItem {
    /// A new pending row of `lead` (or a failed one opened again), due
    /// now.
    pub(crate) fn pending(
        c: &NewConversion,
        lead: &Lead,
        keys: (String, i64, String),
        now: i64,
    ) -> Self {
        let (pk, created_at, work_shard) = keys;
        ConversionItem {
            pk,
            sk: c.sk.clone(),
            site_id: lead.site_id.clone(),
            event_id: c.event_id.clone(),
            event_name: c.event_name.as_str().to_owned(),
            lead_id: lead.lead_id.clone(),
            lead_key: lead.lead_key.clone(),
            event_time: c.event_time,
            created_at,
            status: ConversionStatus::Pending.as_str().to_owned(),
            attempts: 0,
            next_attempt_at: Some(now),
            lease_until: None,
            value_cents: c.value_cents,
            currency: c.currency.clone(),
            sent_at: None,
            last_error: None,
            ph: c.hashes.ph.clone(),
            external_id: c.hashes.external_id.clone(),
            work_shard: Some(work_shard),
            work_at: Some(now),
        }
    }
}

impl TryFrom<ConversionItem> for Conversion {
    type Error = StoreError;
    fn try_from(i: ConversionItem) -> Result<Self, StoreError> {
        let hashes = (!i.ph.is_empty() || i.external_id.is_some()).then_some(ContactHashes {
            ph: i.ph,
            external_id: i.external_id,
        });
        Ok(Conversion {
            event_name: parse(EventName::parse(&i.event_name), "conversion", "eventName")?,
            status: parse(ConversionStatus::parse(&i.status), "conversion", "status")?,
            site_id: i.site_id,
            sk: i.sk,
            event_id: i.event_id,
            lead_id: i.lead_id,
            lead_key: i.lead_key,
            event_time: i.event_time,
            created_at: i.created_at,
            attempts: i.attempts,
            next_attempt_at: i.next_attempt_at,
            lease_until: i.lease_until,
            value_cents: i.value_cents,
            currency: i.currency,
            sent_at: i.sent_at,
            last_error: i.last_error,
            hashes,
            work_at: i.work_at,
        })
    }
}

/// `catalog#<siteId>` / `<adId>`: its writes are updates of the fields a
/// run learnt.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CatalogItem {
    sk: String,
    ad_account_id: Option<String>,
    ad_name: Option<String>,
    adset_id: Option<String>,
    adset_name: Option<String>,
    campaign_id: Option<String>,
    campaign_name: Option<String>,
    ad_status: Option<String>,
    creative_type: Option<String>,
    thumbnail_key: Option<String>,
}

impl From<CatalogItem> for CatalogEntry {
    fn from(i: CatalogItem) -> Self {
        CatalogEntry {
            ad_id: i.sk,
            ad_account_id: i.ad_account_id,
            ad_name: i.ad_name,
            adset_id: i.adset_id,
            adset_name: i.adset_name,
            campaign_id: i.campaign_id,
            campaign_name: i.campaign_name,
            ad_status: i.ad_status,
            creative_type: i.creative_type,
            thumbnail_key: i.thumbnail_key,
        }
    }
}

/// The figures of a spend row or a site-day sum; a sum's counters come by
/// `ADD`, so an absent one is `0`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FiguresItem {
    #[serde(default)]
    spend_cents: i64,
    #[serde(default)]
    impressions: i64,
    #[serde(default)]
    clicks: i64,
}

impl From<FiguresItem> for SpendFigures {
    fn from(i: FiguresItem) -> Self {
        SpendFigures {
            spend_cents: i.spend_cents,
            impressions: i.impressions,
            clicks: i.clicks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lead() -> Lead {
        Lead {
            site_id: "loja-x".into(),
            lead_key: "k1".into(),
            lead_id: "l1".into(),
            origin: "ctwa_ad".into(),
            ad_id: Some("123".into()),
            label: None,
            column: Some("novo".into()),
            stage: Stage::Won,
            revenue_cents: Some(45_990),
            created_at: 5,
            cohort_day: 0,
            last_move_at: 7,
            conversions: [(EventName::Purchase, "0000000000009#abc".to_owned())].into(),
            entries: vec![("novo".into(), 0)],
            version: 2,
        }
    }

    #[test]
    fn a_lead_round_trips_through_its_item_one_version_on() {
        let item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
        assert!(item["conversions"].as_s().is_ok(), "a JSON text attribute");
        assert!(!item.contains_key("label"), "absent, not null");
        let back: Lead = decode::<LeadItem>(&item, "lead")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(
            back,
            Lead {
                version: 3,
                ..lead()
            }
        );
    }

    #[test]
    fn a_missing_attribute_is_an_error_that_names_it_and_no_value() {
        let mut item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
        item.remove("lastMoveAt");
        match decode::<LeadItem>(&item, "lead") {
            Err(StoreError::Malformed(why)) => assert_eq!(why, "lead: missing `lastMoveAt`"),
            other => panic!("{:?}", other.err()),
        }
        let mut item = encode(&LeadItem::of(&lead(), "lead#loja-x".into(), 9), "lead").unwrap();
        item.insert(
            "createdAt".into(),
            aws_sdk_dynamodb::types::AttributeValue::S("secret-ish".into()),
        );
        match decode::<LeadItem>(&item, "lead") {
            Err(StoreError::Malformed(why)) => assert!(!why.contains("secret-ish"), "{why}"),
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn hashes_are_a_string_set_and_a_pixel_token_is_binary() {
        let conv = Conversion {
            site_id: "loja-x".into(),
            sk: "0000000000009#e".into(),
            event_id: "e".into(),
            event_name: EventName::Lead,
            lead_id: "l".into(),
            lead_key: "k".into(),
            event_time: 1,
            created_at: 9,
            status: ConversionStatus::Pending,
            attempts: 0,
            next_attempt_at: Some(9),
            lease_until: None,
            value_cents: None,
            currency: None,
            sent_at: None,
            last_error: None,
            hashes: Some(ContactHashes {
                ph: vec!["a".repeat(64)],
                external_id: None,
            }),
            work_at: Some(9),
        };
        let new = NewConversion {
            event_id: "e".into(),
            event_name: EventName::Lead,
            event_time: 1,
            value_cents: None,
            currency: None,
            hashes: conv.hashes.clone().unwrap(),
            reopens: None,
            sk: conv.sk.clone(),
        };
        let owner = Lead {
            lead_id: "l".into(),
            lead_key: "k".into(),
            ..lead()
        };
        let keys = ("conv#loja-x".to_owned(), 9, "send#1".to_owned());
        let item = encode(&ConversionItem::pending(&new, &owner, keys, 9), "c").unwrap();
        assert!(item["ph"].as_ss().is_ok());
        let back: Conversion = decode::<ConversionItem>(&item, "c")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(back, conv);
        let pixel = SitePixel {
            site_id: "loja-x".into(),
            pixel_id: "1".into(),
            name: "p".into(),
            source: PixelSource::Token {
                sealed_token: vec![1, 2, 3],
                token_version: "v".into(),
                set_by: None,
            },
            enabled: true,
            send_lead_event: false,
            test_event_code: None,
            last_error: None,
            stopped: false,
            not_granted: false,
            updated_at: 4,
        };
        let item = encode(
            &PixelItem::of(&pixel, "site#loja-x".into(), "pixel".into(), None),
            "pixel",
        )
        .unwrap();
        assert!(item["sealedToken"].as_b().is_ok());
        let back: SitePixel = decode::<PixelItem>(&item, "pixel")
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(back, pixel);
    }
}
