//! The items of a site's setup: the site, its links, owners' connections,
//! its pixel and its board.

use std::collections::BTreeMap;

use adtrail_domain::board::{Board, Column};
use adtrail_domain::capi::EventName;
use adtrail_domain::links::{SiteAdAccount, SlotPlace};
use adtrail_domain::outcome::SyncState;
use adtrail_domain::pixels::{ConnectionStatus, PixelSource, SitePixel};
use serde::{Deserialize, Serialize};

use super::parse;
use super::{json_text, json_text_opt};
use crate::connections::{Connection, ListedAccount, ListedPixel};
use crate::error::StoreError;
use crate::keys::parse_slot_shard;
use crate::sites::Site;

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
    slot_at: Option<i64>,
    slot_shard: Option<String>,
    slot: Option<i64>,
    created_at: i64,
    lease_ms: Option<i64>,
    catalog_digest: Option<String>,
}

/// A new link's item, as linking writes it: due at once for its backfill
/// (the sharded due index), in its owner's index.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewLinkItem<'a> {
    pub(crate) pk: String,
    pub(crate) sk: String,
    pub(crate) site_id: &'a str,
    pub(crate) ad_account_id: &'a str,
    pub(crate) owner_key: &'a str,
    pub(crate) name: &'a str,
    pub(crate) currency: &'a str,
    pub(crate) timezone: &'a str,
    pub(crate) sync_state: &'static str,
    #[serde(rename = "gsi1pk")]
    pub(crate) gsi1_pk: String,
    #[serde(rename = "gsi1sk")]
    pub(crate) gsi1_sk: String,
    pub(crate) due_shard: String,
    pub(crate) next_sync_at: i64,
    pub(crate) created_at: i64,
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
            // A slotted link's next sync is `slotAt` (`nextSyncAt` is the
            // `due` index's key, and it is not in that index).
            next_sync_at: i.next_sync_at.or(i.slot_at),
            slot: match i.slot_shard.as_deref() {
                None => None,
                Some(shard) => Some(SlotPlace {
                    cadence: parse(parse_slot_shard(shard), "link", "slotShard")?,
                    slot: parse(i.slot, "link", "slot")?,
                }),
            },
            created_at: i.created_at,
            lease_ms: i.lease_ms,
            catalog_digest: i.catalog_digest,
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
