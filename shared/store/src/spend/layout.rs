//! How an account's spend of a day is stored, and how a set of row changes
//! becomes item writes.
//!
//! A day's ad rows are packed into chunk items (`<dayStart>!<chunk>`) of
//! about a kilobyte, a map from ad id to `[spendCents, impressions, clicks,
//! updatedAt]`. DynamoDB bills a write by the kilobyte of the item written,
//! and twice in a transaction: a live sync rewrites every ad that delivered
//! today, so one item an ad cost two units an ad, and a chunk costs two units
//! for about twenty ads. Keeping chunks near a kilobyte keeps the sparse case
//! (one ad of a past day corrected) at the one item it cost before.
//!
//! A chunk's ads stay in it: a new ad goes to the first chunk with room,
//! else to a new one, and a chunk emptied is deleted. Each chunk carries a
//! version `v`; a write is conditioned on the version read, so two
//! executions of one run cannot both apply their changes.
//!
//! Rows written one item an ad (`<dayStart>#<adId>`, before the chunks) are
//! read as they are; a change to one moves it into a chunk, deleting the
//! old item in the same transaction.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};

use adtrail_domain::spend::{RowChange, SpendFigures, SpendRow};

use crate::StoreError;
use crate::attr::{Item, get_n, get_s, n, s};
use crate::keys::{PK, SK, parse_spend_chunk_sk, parse_spend_sk, spend_chunk_sk, spend_sk};

/// The bytes a chunk item is filled to, leaving a few for its figures to
/// grow in place and stay within a kilobyte.
const ITEM_FILL: usize = 1_000;

/// The bytes of ad entries a chunk of `pk` takes: [`ITEM_FILL`] less its
/// key, its version and the map's overhead.
fn entries_fill(pk: &str) -> usize {
    ITEM_FILL.saturating_sub(PK.len() + pk.len() + SK.len() + 18 + 1 + 8 + ADS.len() + 3)
}

/// The attribute holding a chunk's ads.
const ADS: &str = "ads";

/// An ad's figures and the start of the run that last wrote them.
type Entry = (SpendFigures, i64);

/// One chunk as read, and what the write makes of it.
#[derive(Debug, Default)]
struct Chunk {
    /// The version read; `None` for a chunk this write creates.
    version: Option<i64>,
    ads: BTreeMap<String, Entry>,
    /// The entries' bytes, kept as they change: a new ad asks each chunk
    /// for room, and summing every entry each time is quadratic in a day.
    bytes: usize,
    dirty: bool,
    /// One-ad items of the same day whose ads this write moves here.
    moved: Vec<(String, SpendFigures)>,
    delta: SpendFigures,
}

/// A day of one account, as stored.
#[derive(Debug, Default)]
pub(super) struct Day {
    chunks: BTreeMap<u16, Chunk>,
    /// Rows still in their own item.
    single: BTreeMap<String, Entry>,
    /// One-ad items this write deletes without moving, with their figures.
    dropped: Vec<(String, SpendFigures)>,
}

/// Where an ad's row of a day is.
enum Home {
    Chunk(u16),
    Single,
}

/// A row's or a chunk's DynamoDB size, as DynamoDB counts it: a number is
/// about a byte per two digits and one more.
fn number_bytes(v: i64) -> usize {
    let digits = v
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d as usize + 1);
    digits / 2 + 2
}

/// An ad entry's bytes in a chunk: its key, and a list of four numbers.
fn entry_bytes(ad: &str, (f, at): &Entry) -> usize {
    ad.len()
        + 3
        + [f.spend_cents, f.impressions, f.clicks, *at]
            .into_iter()
            .map(number_bytes)
            .sum::<usize>()
}

impl Chunk {
    fn read(version: i64, ads: BTreeMap<String, Entry>) -> Self {
        let bytes = ads.iter().map(|(ad, e)| entry_bytes(ad, e)).sum();
        Chunk {
            version: Some(version),
            ads,
            bytes,
            ..Chunk::default()
        }
    }

    /// Puts or replaces an ad's entry, moving the day's sum by `delta`.
    fn put(&mut self, ad: String, entry: Entry, delta: SpendFigures) {
        self.bytes += entry_bytes(&ad, &entry);
        if let Some(old) = self.ads.insert(ad.clone(), entry) {
            self.bytes -= entry_bytes(&ad, &old);
        }
        self.dirty = true;
        self.delta.add(delta);
    }

    fn remove(&mut self, ad: &str, delta: SpendFigures) {
        if let Some(old) = self.ads.remove(ad) {
            self.bytes -= entry_bytes(ad, &old);
        }
        self.dirty = true;
        self.delta.add(delta);
    }
}

/// Reads a stored item into the days it belongs to; an item that is
/// neither a chunk nor a one-ad row is skipped.
pub(super) fn read_item(days: &mut BTreeMap<i64, Day>, item: &Item) -> Result<(), StoreError> {
    let Some(sk) = get_s(item, SK) else {
        return Ok(());
    };
    if let Some((day, n)) = parse_spend_chunk_sk(sk) {
        let chunk = Chunk::read(get_n(item, "v").unwrap_or(0), decode_ads(item)?);
        days.entry(day).or_default().chunks.insert(n, chunk);
    } else if let Some((day, ad)) = parse_spend_sk(sk) {
        let entry = (
            super::figures_of(item)?,
            get_n(item, "updatedAt").unwrap_or(0),
        );
        days.entry(day)
            .or_default()
            .single
            .insert(ad.to_owned(), entry);
    }
    Ok(())
}

/// The rows of one stored item, chunk or one-ad row.
pub(super) fn rows_of(item: &Item) -> Result<Vec<SpendRow>, StoreError> {
    let mut days = BTreeMap::new();
    read_item(&mut days, item)?;
    Ok(days
        .into_iter()
        .flat_map(|(day_start, day)| {
            let chunked = day.chunks.into_values().flat_map(|c| c.ads);
            chunked
                .chain(day.single)
                .map(move |(ad_id, (figures, updated_at))| SpendRow {
                    day_start,
                    ad_id,
                    figures,
                    updated_at,
                })
        })
        .collect())
}

fn decode_ads(item: &Item) -> Result<BTreeMap<String, Entry>, StoreError> {
    let bad = || StoreError::Malformed("a spend chunk: its ads".into());
    let Some(AttributeValue::M(ads)) = item.get(ADS) else {
        return Err(bad());
    };
    ads.iter()
        .map(|(ad, v)| {
            let AttributeValue::L(list) = v else {
                return Err(bad());
            };
            let num = |i: usize| -> Result<i64, StoreError> {
                list.get(i)
                    .and_then(|v| v.as_n().ok())
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(bad)
            };
            let figures = SpendFigures {
                spend_cents: num(0)?,
                impressions: num(1)?,
                clicks: num(2)?,
            };
            Ok((ad.clone(), (figures, num(3)?)))
        })
        .collect()
}

impl Day {
    fn find(&self, ad: &str) -> Option<(Home, SpendFigures)> {
        if let Some((n, c)) = self.chunks.iter().find(|(_, c)| c.ads.contains_key(ad)) {
            return Some((Home::Chunk(*n), c.ads[ad].0));
        }
        self.single.get(ad).map(|e| (Home::Single, e.0))
    }

    /// The chunk a new ad goes to: the first with room, else a new one.
    fn room_for(&mut self, ad: &str, entry: &Entry, fill: usize) -> &mut Chunk {
        let size = entry_bytes(ad, entry);
        let n = self
            .chunks
            .iter()
            .find(|(_, c)| c.bytes + size <= fill)
            .map(|(n, _)| *n)
            .unwrap_or_else(|| self.chunks.keys().next_back().map_or(0, |n| n + 1));
        self.chunks.entry(n).or_default()
    }

    /// Applies one change checked against what is stored. Answers `false`
    /// when the row no longer holds what the change was computed from.
    fn apply(&mut self, change: &RowChange, fill: usize) -> bool {
        let (row, expected) = match change {
            RowChange::Put { row, old } => (row, *old),
            RowChange::Delete { row } => (row, Some(row.figures)),
        };
        let found = self.find(&row.ad_id);
        if found.as_ref().map(|f| f.1) != expected {
            return false;
        }
        let delta = change.delta();
        let ad = row.ad_id.clone();
        let entry = (row.figures, row.updated_at);
        match (change, found.map(|f| f.0)) {
            (RowChange::Put { .. }, Some(Home::Chunk(n))) => {
                let chunk = self.chunks.get_mut(&n).expect("found in it");
                chunk.put(ad, entry, delta);
            }
            (RowChange::Put { .. }, home) => {
                let moved = matches!(home, Some(Home::Single))
                    .then(|| (ad.clone(), self.single.remove(&ad).expect("found").0));
                let chunk = self.room_for(&ad, &entry, fill);
                chunk.put(ad, entry, delta);
                chunk.moved.extend(moved);
            }
            (RowChange::Delete { .. }, Some(Home::Chunk(n))) => {
                self.chunks
                    .get_mut(&n)
                    .expect("found in it")
                    .remove(&ad, delta);
            }
            (RowChange::Delete { .. }, _) => {
                let (figures, _) = self.single.remove(&ad).expect("found");
                self.dropped.push((ad, figures));
            }
        }
        true
    }
}

/// Writes that must land in one transaction, and what they add to their
/// day's sum. Its items are built only when its transaction is: a run's
/// changes are held as figures, not as request values, so a part of
/// thousands of ad-days stays small in memory.
pub(super) struct Unit {
    day: i64,
    kind: UnitKind,
}

enum UnitKind {
    /// A chunk written, with the one-ad items whose ads moved into it.
    Chunk(u16, Chunk),
    /// A one-ad item deleted, with its figures.
    Dropped(String, SpendFigures),
}

impl Unit {
    pub(super) fn day(&self) -> i64 {
        self.day
    }

    /// The transaction items it takes.
    pub(super) fn len(&self) -> usize {
        match &self.kind {
            UnitKind::Chunk(_, chunk) => 1 + chunk.moved.len(),
            UnitKind::Dropped(..) => 1,
        }
    }

    /// What it adds to its day's sum.
    pub(super) fn delta(&self) -> SpendFigures {
        match &self.kind {
            UnitKind::Chunk(_, chunk) => chunk.delta,
            UnitKind::Dropped(_, figures) => SpendFigures::default().minus(*figures),
        }
    }

    /// Its transaction items.
    pub(super) fn into_items(
        self,
        place: &Place<'_>,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        match self.kind {
            UnitKind::Chunk(n, chunk) => {
                let mut items = vec![chunk_write(place, self.day, n, &chunk)?];
                for (ad, old) in &chunk.moved {
                    items.push(single_delete(place, self.day, ad, *old)?);
                }
                Ok(items)
            }
            UnitKind::Dropped(ad, figures) => {
                Ok(vec![single_delete(place, self.day, &ad, figures)?])
            }
        }
    }
}

/// The keys of one account's spend.
pub(super) struct Place<'a> {
    pub(super) table: &'a str,
    pub(super) pk: String,
}

/// Applies `changes` to the days read (of the account whose spend key is
/// `pk`); answers the units to write, or `None` when a change no longer
/// fits what is stored.
pub(super) fn plan(
    pk: &str,
    mut days: BTreeMap<i64, Day>,
    changes: &[RowChange],
) -> Option<Vec<Unit>> {
    let fill = entries_fill(pk);
    for change in changes {
        if !days.entry(change.day()).or_default().apply(change, fill) {
            return None;
        }
    }
    let mut units = vec![];
    for (day, stored) in days {
        for (n, chunk) in stored.chunks {
            if chunk.dirty {
                units.push(Unit {
                    day,
                    kind: UnitKind::Chunk(n, chunk),
                });
            }
        }
        for (ad, figures) in stored.dropped {
            units.push(Unit {
                day,
                kind: UnitKind::Dropped(ad, figures),
            });
        }
    }
    Some(units)
}

/// A chunk's put, or its delete once empty, on the version read.
fn chunk_write(
    place: &Place<'_>,
    day: i64,
    number: u16,
    chunk: &Chunk,
) -> Result<TransactWriteItem, StoreError> {
    let key = s(spend_chunk_sk(day, number));
    let (condition, read) = match chunk.version {
        Some(v) => ("v = :v", Some(n_value(":v", v))),
        None => ("attribute_not_exists(pk)", None),
    };
    if chunk.ads.is_empty() {
        let delete = Delete::builder()
            .table_name(place.table)
            .key(PK, s(&place.pk))
            .key(SK, key)
            .condition_expression(condition)
            .set_expression_attribute_values(read)
            .build()
            .map_err(StoreError::ddb)?;
        return Ok(TransactWriteItem::builder().delete(delete).build());
    }
    let ads = chunk
        .ads
        .iter()
        .map(|(ad, (f, at))| {
            let list = [f.spend_cents, f.impressions, f.clicks, *at].map(n);
            (ad.clone(), AttributeValue::L(list.into()))
        })
        .collect();
    let put = Put::builder()
        .table_name(place.table)
        .item(PK, s(&place.pk))
        .item(SK, key)
        .item(ADS, AttributeValue::M(ads))
        .item("v", n(chunk.version.unwrap_or(0) + 1))
        .condition_expression(condition)
        .set_expression_attribute_values(read)
        .build()
        .map_err(StoreError::ddb)?;
    Ok(TransactWriteItem::builder().put(put).build())
}

fn n_value(name: &str, v: i64) -> Item {
    [(name.to_owned(), n(v))].into()
}

/// A one-ad item's delete, on the figures read.
fn single_delete(
    place: &Place<'_>,
    day: i64,
    ad: &str,
    f: SpendFigures,
) -> Result<TransactWriteItem, StoreError> {
    let delete = Delete::builder()
        .table_name(place.table)
        .key(PK, s(&place.pk))
        .key(SK, s(spend_sk(day, ad)))
        .condition_expression(
            "spendCents = :oldSpend AND impressions = :oldImpressions AND clicks = :oldClicks",
        )
        .set_expression_attribute_values(Some(
            [
                (":oldSpend".to_owned(), n(f.spend_cents)),
                (":oldImpressions".to_owned(), n(f.impressions)),
                (":oldClicks".to_owned(), n(f.clicks)),
            ]
            .into(),
        ))
        .build()
        .map_err(StoreError::ddb)?;
    Ok(TransactWriteItem::builder().delete(delete).build())
}

#[cfg(test)]
mod model;
#[cfg(test)]
mod tests;
