//! The key layout of the one DynamoDB table: every item's `pk`/`sk`, and the
//! four indexes. The only place that builds a key.
//!
//! | item | pk | sk | indexes |
//! | --- | --- | --- | --- |
//! | site | `site#<siteId>` | `site` | |
//! | link (site ← ad account) | `site#<siteId>` | `link#<act>` | `owner` (gsi1); while not paused, `slot` when its syncs keep a cadence's slot, else `due` |
//! | the dispatcher's cursor: how far each cadence's slots were visited | `dispatch` | `cursor` | |
//! | account claim (one site per account) | `acct#<act>` | `claim` | |
//! | connection (owner's token and listing) | `owner#<ownerKey>` | `connection` | `owner` under `expiry` (`<expiresAt>#<ownerKey>`) until flagged as expiring soon |
//! | spend of an account-local day, its ads packed about a kilobyte an item | `spend#<siteId>#<act>` | `<dayStart>!<chunk>` | |
//! | spend row of one ad-day, as written before the chunks (read, moved on its next change) | `spend#<siteId>#<act>` | `<dayStart>#<adId>` | |
//! | site-day sum of an account | `sum#<siteId>#<act>` | `<dayStart>` | |
//! | catalog entry | `catalog#<siteId>` | `<adId>` | |
//! | purge of an unlinked account | `purge#<siteId>` | `<act>` | `work` |
//! | board and event map | `site#<siteId>` | `board` | |
//! | pixel | `site#<siteId>` | `pixel` | |
//! | destination (a platform account the site's events go to) | `dest#<siteId>` | `<slug>` | |
//! | lead | `lead#<siteId>` | `<leadKey>` | |
//! | an ad that brought a lead (for naming) | `leadad#<siteId>` | `<adId>` | |
//! | a cohort's lead counters (by origin `o#…`, ad `a#…` and Lead Ads form `f#…`) | `rollup#<siteId>` | `<cohortDay>#<dim>` | |
//! | a Lead Ads form's leads of a UTC day, by the rules' decision | `formday#<siteId>#<formId>` | `<dayStart>` | |
//! | a lead change seen (idempotency) | `change#<siteId>` | `<changeId>` | |
//! | a lead entering a column on a UTC day | `entry#<siteId>#<column>` | `<dayStart>#<leadId>` | |
//! | a posted event queued for a destination (idempotency) | `posted#<siteId>` | `<slug>#<eventId>` | |
//! | conversion (outbox row and history) | `conv#<siteId>` | `<createdAt>#<eventId>` | `work` while pending, unless its send batch stands for it |
//! | a sender's receipt: the ends it counted, before it wrote them on the rows (kept a day) | `receipt#<siteId>` | `<leaseId>#<part>` | |
//! | a send batch: the rows of a site created in one millisecond of a posted batch, watched as one, and the list of those its writer counted (`rows`) | `sendbatch#<siteId>` | `<createdAt>` | `work` while any of its rows is pending |
//! | conversion counters, sharded | `count#<siteId>#<n>` | `total`, `day#<dayStart>` | |
//! | a site being erased | `erase#<siteId>` | `erase` | `work` while it runs |
//!
//! Indexes: `owner` (`gsi1pk`, `gsi1sk`) lists an owner's links and pixels,
//! and (partition `expiry`) the tokens the sweeper will flag; `due`
//! (`dueShard`, `nextSyncAt`) lists links whose next sync has come, spread
//! over [`DUE_SHARDS`] partitions so no one partition is hot, and absent on
//! paused links and on links that keep a slot; `slot` (`slotShard`:
//! `slot#i` for the sync interval, `slot#q` for the quiet one; `slot`: the
//! link's point in the cycle, its next sync time modulo the cadence, which
//! the item keeps as `slotAt`) lists links whose syncs keep their cadence:
//! a run that does moves no entry, where a move in `due` costs two write
//! units a run; `work` (`workShard`, `workAt`) lists background work the
//! same way: purges (`purge#<n>`), erasures (`erase#<n>`) and pending
//! conversions by the time their attempt is due (`send#<n>`), so the
//! sweeper finds lost sends without a scan. A posted batch's rows are not
//! in the index one by one: their send batch is, at the time the rows were
//! written (an index entry costs a write unit when a row is queued and
//! another when it is sent).

use adtrail_domain::links::Cadence;
use sha2::{Digest, Sha256};

pub const PK: &str = "pk";
pub const SK: &str = "sk";
pub const GSI1: &str = "owner";
pub const GSI1_PK: &str = "gsi1pk";
pub const GSI1_SK: &str = "gsi1sk";
pub const DUE_INDEX: &str = "due";
pub const DUE_SHARD: &str = "dueShard";
pub const NEXT_SYNC_AT: &str = "nextSyncAt";
pub const SLOT_INDEX: &str = "slot";
pub const SLOT_SHARD: &str = "slotShard";
pub const SLOT: &str = "slot";
pub const WORK_INDEX: &str = "work";
pub const WORK_SHARD: &str = "workShard";
pub const WORK_AT: &str = "workAt";

/// Partitions of the due-time index.
pub const DUE_SHARDS: u32 = 8;
/// Partitions of the work index.
pub const WORK_SHARDS: u32 = 8;

/// Every index the code queries, with its key attributes: checked against
/// `template.yaml` by a test.
pub const INDEXES: [(&str, &str, &str); 4] = [
    (GSI1, GSI1_PK, GSI1_SK),
    (DUE_INDEX, DUE_SHARD, NEXT_SYNC_AT),
    (SLOT_INDEX, SLOT_SHARD, SLOT),
    (WORK_INDEX, WORK_SHARD, WORK_AT),
];

/// A stable shard in `0..shards` for a key.
pub fn shard_of(key: &str, shards: u32) -> u32 {
    let digest = Sha256::digest(key.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % shards
}

pub fn site_pk(site: &str) -> String {
    format!("site#{site}")
}
pub const SITE_SK: &str = "site";
/// Every site's id, so a host can list its sites: `sites` / `<siteId>`.
pub const SITES_PK: &str = "sites";
pub fn link_sk(account: &str) -> String {
    format!("link#{account}")
}
pub const LINK_SK_PREFIX: &str = "link#";
pub fn claim_pk(account: &str) -> String {
    format!("acct#{account}")
}
pub const CLAIM_SK: &str = "claim";
pub fn owner_pk(owner: &str) -> String {
    format!("owner#{owner}")
}
pub const CONNECTION_SK: &str = "connection";
pub fn owner_link_sk(site: &str, account: &str) -> String {
    format!("link#{site}#{account}")
}
pub fn due_shard(site: &str, account: &str) -> String {
    format!("due#{}", shard_of(&format!("{site}#{account}"), DUE_SHARDS))
}
pub fn due_shard_n(n: u32) -> String {
    format!("due#{n}")
}
/// The `slot` partition of a cadence's links.
pub fn slot_shard(cadence: Cadence) -> &'static str {
    match cadence {
        Cadence::Interval => "slot#i",
        Cadence::Quiet => "slot#q",
    }
}
/// The cadence a `slot` partition is of.
pub fn parse_slot_shard(shard: &str) -> Option<Cadence> {
    [Cadence::Interval, Cadence::Quiet]
        .into_iter()
        .find(|c| slot_shard(*c) == shard)
}
pub const DISPATCH_PK: &str = "dispatch";
pub const CURSOR_SK: &str = "cursor";
pub fn spend_pk(site: &str, account: &str) -> String {
    format!("spend#{site}#{account}")
}
/// Day starts are padded so the sort key orders by time.
pub fn spend_sk(day_start: i64, ad: &str) -> String {
    format!("{day_start:013}#{ad}")
}
/// A chunk of a day's spend: `!` sorts before `#`, so a day's chunks come
/// before its older one-ad rows, and both inside the day's key range.
pub fn spend_chunk_sk(day_start: i64, chunk: u16) -> String {
    format!("{day_start:013}!{chunk:04}")
}
/// Parses a chunk's sort key back into `(dayStart, chunk)`.
pub fn parse_spend_chunk_sk(sk: &str) -> Option<(i64, u16)> {
    let (day, chunk) = sk.split_once('!')?;
    Some((day.parse().ok()?, chunk.parse().ok()?))
}
pub fn day_sk(day_start: i64) -> String {
    format!("{day_start:013}")
}
/// The day start a site-day sum's sort key names.
pub fn parse_day_sk(sk: &str) -> Option<i64> {
    sk.parse().ok()
}
pub fn sum_pk(site: &str, account: &str) -> String {
    format!("sum#{site}#{account}")
}
pub fn catalog_pk(site: &str) -> String {
    format!("catalog#{site}")
}
pub fn purge_pk(site: &str) -> String {
    format!("purge#{site}")
}
pub fn purge_shard(site: &str, account: &str) -> String {
    format!(
        "purge#{}",
        shard_of(&format!("{site}#{account}"), WORK_SHARDS)
    )
}
pub fn purge_shard_n(n: u32) -> String {
    format!("purge#{n}")
}

pub const BOARD_SK: &str = "board";
pub fn lead_pk(site: &str) -> String {
    format!("lead#{site}")
}
pub fn lead_ad_pk(site: &str) -> String {
    format!("leadad#{site}")
}
pub fn rollup_pk(site: &str) -> String {
    format!("rollup#{site}")
}
pub fn rollup_sk(day_start: i64, dim: &str) -> String {
    format!("{day_start:013}#{dim}")
}
pub fn change_pk(site: &str) -> String {
    format!("change#{site}")
}
pub fn entry_pk(site: &str, column: &str) -> String {
    format!("entry#{site}#{column}")
}
pub fn entry_sk(day_start: i64, lead_id: &str) -> String {
    format!("{day_start:013}#{lead_id}")
}
/// An owner's listed Pages: `page#<ownerKey>` / `<pageId>`.
pub fn page_pk(owner: &str) -> String {
    format!("page#{owner}")
}
/// A Page's link: `pagelink#<pageId>` / `link` (one site a Page), and the
/// site's side of it, `sitepage#<siteId>` / `<pageId>`.
pub fn page_link_pk(page: &str) -> String {
    format!("pagelink#{page}")
}
pub const PAGE_LINK_SK: &str = "link";
pub fn site_page_pk(site: &str) -> String {
    format!("sitepage#{site}")
}
/// A site's Lead Ads forms and their rules: `siteforms#<siteId>` /
/// `form#<formId>` and `rules#<formId>`.
pub fn site_forms_pk(site: &str) -> String {
    format!("siteforms#{site}")
}
pub fn form_sk(form: &str) -> String {
    format!("form#{form}")
}
pub fn rules_sk(form: &str) -> String {
    format!("rules#{form}")
}
pub const FORM_SK_PREFIX: &str = "form#";
/// A form's leads on a site, by time: `formleads#<siteId>#<formId>` /
/// `<createdAt, 13 digits>#<leadgenId>`.
pub fn form_leads_pk(site: &str, form: &str) -> String {
    format!("formleads#{site}#{form}")
}
/// A site being erased: `erase#<siteId>` / `erase`, in the work index
/// under `erase#<n>` while it runs.
pub fn erase_pk(site: &str) -> String {
    format!("erase#{site}")
}
pub const ERASE_SK: &str = "erase";
pub fn parse_erase_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("erase#")
}
pub fn erase_shard(site: &str) -> String {
    format!("erase#{}", shard_of(site, WORK_SHARDS))
}
pub fn erase_shard_n(n: u32) -> String {
    format!("erase#{n}")
}
/// A Lead Ads form's day counters (sort key: [`day_sk`]).
pub fn form_day_pk(site: &str, form: &str) -> String {
    format!("formday#{site}#{form}")
}
pub fn form_lead_sk(created_at: i64, leadgen_id: &str) -> String {
    format!("{created_at:013}#{leadgen_id}")
}
/// A form lead found by its id: `formleadid#<siteId>` / `<leadgenId>`,
/// naming its form and time (its record's key).
pub fn form_lead_ref_pk(site: &str) -> String {
    format!("formleadid#{site}")
}
/// A linked Page's shard of the work index: its next reconciliation.
pub fn reconcile_shard(page: &str) -> String {
    format!("recon#{}", shard_of(page, WORK_SHARDS))
}
pub fn reconcile_shard_n(n: u32) -> String {
    format!("recon#{n}")
}
pub fn dest_pk(site: &str) -> String {
    format!("dest#{site}")
}
pub fn posted_pk(site: &str) -> String {
    format!("posted#{site}")
}
pub fn posted_sk(slug: &str, event_id: &str) -> String {
    format!("{slug}#{event_id}")
}
pub fn conv_pk(site: &str) -> String {
    format!("conv#{site}")
}
/// Conversions sort by creation time, then event id: the list's cursor.
/// The domain owns the format ([`adtrail_domain::capi::conversion_ref`]).
pub fn conv_sk(created_at: i64, event_id: &str) -> String {
    adtrail_domain::capi::conversion_ref(created_at, event_id)
}
/// Partitions of the conversion counters.
pub const COUNT_SHARDS: u32 = 8;
pub fn count_pk(site: &str, shard: u32) -> String {
    format!("count#{site}#{shard}")
}
pub const COUNT_TOTAL_SK: &str = "total";
pub fn count_day_sk(day_start: i64) -> String {
    format!("day#{day_start:013}")
}
/// The send batches of a site: its rows created in one millisecond by a
/// posted batch, which have no `work` entry of their own.
pub fn send_batch_pk(site: &str) -> String {
    format!("sendbatch#{site}")
}
/// The receipts of a site's send ends: what a sender counted before it
/// ended the rows ([`crate::receipts`]).
pub fn receipt_pk(site: &str) -> String {
    format!("receipt#{site}")
}
/// A receipt's sort key: the lease that wrote it, and its part.
pub fn receipt_sk(lease_id: &str, part: usize) -> String {
    format!("{lease_id}#{part:04}")
}
/// A send batch's sort key: the creation time its rows' keys start with.
pub fn send_batch_sk(created_at: i64) -> String {
    format!("{created_at:013}")
}
/// A row's member in its send batch's list of the rows it counted
/// (`rows`): enough of the row's key to know it again (the first 32 hex
/// digits of its hash: all of a batch's rows share its time), and what the
/// counters moved for it.
pub fn send_batch_member(sk: &str, slug: &str, event: &str) -> String {
    let hash = sk.split_once('#').map_or(sk, |(_, h)| h);
    format!("{}|{slug}|{event}", prefix(hash, 32))
}
/// The first `chars` characters of `text` (all of it when shorter).
pub fn prefix(text: &str, chars: usize) -> &str {
    text.char_indices()
        .nth(chars)
        .map_or(text, |(i, _)| &text[..i])
}
/// A member's destination slug and event name.
pub fn parse_send_batch_member(member: &str) -> Option<(&str, &str)> {
    let mut parts = member.splitn(3, '|');
    let (_, slug, event) = (parts.next()?, parts.next()?, parts.next()?);
    Some((slug, event))
}
pub fn send_shard(event_id: &str) -> String {
    format!("send#{}", shard_of(event_id, WORK_SHARDS))
}
pub fn send_shard_n(n: u32) -> String {
    format!("send#{n}")
}

/// The dimension a lead's cohort counters are kept under: its origin, its
/// ad when it has one, and the Meta instant form a Lead Ads lead came from.
/// The rollup sort key ends with it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RollupDim {
    Origin(String),
    Ad(String),
    Form(String),
}

impl RollupDim {
    /// `o#<origin>`, `a#<adId>` or `f#<formId>`.
    pub fn key(&self) -> String {
        match self {
            RollupDim::Origin(o) => format!("o#{o}"),
            RollupDim::Ad(a) => format!("a#{a}"),
            RollupDim::Form(f) => format!("f#{f}"),
        }
    }
    pub fn parse(key: &str) -> Option<Self> {
        match key.split_once('#')? {
            ("o", origin) => Some(RollupDim::Origin(origin.to_owned())),
            ("a", ad) => Some(RollupDim::Ad(ad.to_owned())),
            ("f", form) => Some(RollupDim::Form(form.to_owned())),
            _ => None,
        }
    }
}

/// The site a conversion partition key names.
pub fn parse_conv_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("conv#")
}
/// The site a send batch's partition key names.
pub fn parse_send_batch_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("sendbatch#")
}
/// The day start a counter day item's sort key names.
pub fn parse_count_day_sk(sk: &str) -> Option<i64> {
    sk.strip_prefix("day#")?.parse().ok()
}
/// `(siteId, adAccountId)` of a link item's keys.
pub fn parse_link_keys<'a>(pk: &'a str, sk: &'a str) -> Option<(&'a str, &'a str)> {
    Some((pk.strip_prefix("site#")?, sk.strip_prefix(LINK_SK_PREFIX)?))
}
/// The ad account a claim item's partition key names.
pub fn parse_claim_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("acct#")
}
/// The site a purge marker's partition key names.
pub fn parse_purge_pk(pk: &str) -> Option<&str> {
    pk.strip_prefix("purge#")
}
/// The `owner` index partition of tokens waiting to be flagged as expiring.
pub const EXPIRY_PK: &str = "expiry";
/// Expiring tokens sort by when they end.
pub fn expiry_sk(expires_at: i64, owner: &str) -> String {
    format!("{expires_at:013}#{owner}")
}
pub fn parse_expiry_sk(sk: &str) -> Option<(i64, &str)> {
    let (at, owner) = sk.split_once('#')?;
    Some((at.parse().ok()?, owner))
}

/// Parses a spend sort key back into `(dayStart, adId)`.
pub fn parse_spend_sk(sk: &str) -> Option<(i64, &str)> {
    let (day, ad) = sk.split_once('#')?;
    Some((day.parse().ok()?, ad))
}

#[cfg(test)]
mod tests;
