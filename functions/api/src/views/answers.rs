//! The answers of the routes that change or list things (a site's own, its
//! destinations' and its erasure's are in `sites.rs`): each a typed
//! envelope around the views of what it shows, so no route builds a JSON
//! map. Fields some answers lack are `Option`s skipped when absent; fields
//! the contract shows as `null` are `Option`s written as `null`.

use std::collections::BTreeMap;

use adtrail_domain::board::Board;
use adtrail_domain::capi::EventName;
use adtrail_domain::leadads::PageLink;
use adtrail_domain::leads::Lead;
use serde::Serialize;

use super::{AccountView, AuthorizedBy, ListedPixelView, PixelView};

/// `POST /v1/sites/{siteId}/leads` and `…/{leadKey}/stage`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeadChangeView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) lead_key: &'a str,
    pub(crate) change_id: &'a str,
    pub(crate) changed: bool,
    /// The events queued for the site's pixel.
    pub(crate) queued: &'a [&'a str],
    /// The events queued for each destination (slug: events), when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) routed: Option<BTreeMap<&'a str, Vec<&'a str>>>,
    /// The lead as the change left it, when there is one.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) lead: Option<LeadStateView<'a>>,
    /// Why `meta` was ignored, and the `contact` fields dropped.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub(crate) warnings: &'a [String],
    /// This change was written before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) duplicate: bool,
}

/// A lead's state in a change's answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeadStateView<'a> {
    lead_id: &'a str,
    column: Option<&'a str>,
    stage: &'static str,
    /// `chat` (a lead the host records) or `form` (a Meta instant form's).
    channel: &'static str,
}

impl<'a> LeadStateView<'a> {
    pub(crate) fn of(l: &'a Lead) -> Self {
        Self {
            lead_id: &l.lead_id,
            column: l.column.as_deref(),
            stage: l.stage.as_str(),
            channel: l.channel().as_str(),
        }
    }
}

/// `DELETE /v1/sites/{siteId}/leads/{leadKey}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LeadRemovedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) lead_key: &'a str,
    pub(crate) lead_id: &'a str,
    pub(crate) removed: bool,
}

/// The board and its event map, as every board route answers it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BoardView<'a> {
    site_id: &'a str,
    declared: bool,
    columns: Vec<ColumnView<'a>>,
    pub(crate) send_lead_event: bool,
    /// Whether the pixel sends now (the event map's reads and saves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pixel_enabled: Option<bool>,
}

/// One column of the board, with its event and, when asked, the leads
/// that entered it in 30 days.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ColumnView<'a> {
    key: &'a str,
    name: &'a str,
    group: Option<&'a str>,
    color: Option<&'a str>,
    event: Option<&'static str>,
    month_count: Option<i64>,
}

impl<'a> BoardView<'a> {
    pub(crate) fn of(
        site: &'a str,
        board: &'a Board,
        counts: Option<&BTreeMap<String, i64>>,
        pixel_enabled: Option<bool>,
    ) -> Self {
        let columns = board
            .columns
            .iter()
            .flatten()
            .map(|c| ColumnView {
                key: &c.key,
                name: &c.name,
                group: c.group.as_deref(),
                color: c.color.as_deref(),
                event: board.event_of(&c.key).map(EventName::as_str),
                month_count: counts.map(|m| m.get(&c.key).copied().unwrap_or(0)),
            })
            .collect();
        Self {
            site_id: site,
            declared: board.columns.is_some(),
            columns,
            send_lead_event: board.send_lead_event,
            pixel_enabled,
        }
    }
}

/// `GET /v1/meta/connections/{ownerKey}`: the connection, its accounts
/// (each with the site it feeds, hidden outside the grant) and its
/// pixels; never its token.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionDetailView<'a> {
    pub(crate) owner_key: &'a str,
    pub(crate) status: &'static str,
    pub(crate) invalid_since: Option<i64>,
    pub(crate) authorized_by: Option<AuthorizedBy<'a>>,
    pub(crate) authorized_at: Option<i64>,
    /// `null` for a token that never ends, and for a pasted one, whose end
    /// is not asked; `expiringSoon` is set at login and by the sweeper.
    pub(crate) expires_at: Option<i64>,
    pub(crate) expiring_soon: bool,
    pub(crate) last_error: Option<&'a str>,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) ad_accounts: Vec<AccountView<'a>>,
    pub(crate) pixels: Vec<ListedPixelView<'a>>,
}

/// `DELETE /v1/meta/connections/{ownerKey}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectionRemovedView<'a> {
    pub(crate) owner_key: &'a str,
    pub(crate) removed: bool,
    pub(crate) unlinked: usize,
    pub(crate) pixels_removed: usize,
}

/// `GET /v1/meta/connections/{ownerKey}/pages`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PagesView<'a> {
    pub(crate) owner_key: &'a str,
    pub(crate) pages: Vec<PageView<'a>>,
}

/// A Facebook Page the owner's token lists: what its user may do there,
/// whether its leads can be read, the site it feeds (hidden outside the
/// caller's grant) and that link's state. Never a token.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageView<'a> {
    pub(crate) page_id: &'a str,
    pub(crate) name: &'a str,
    pub(crate) tasks: &'a [String],
    pub(crate) leads_allowed: bool,
    pub(crate) listed_at: i64,
    pub(crate) linked_site_id: Option<&'a str>,
    pub(crate) linked_outside_scope: bool,
    pub(crate) subscribed_at: Option<i64>,
    pub(crate) last_reconcile_at: Option<i64>,
    pub(crate) last_error: Option<String>,
    /// Linked by this owner (a dashboard's screens mark the others').
    pub(crate) own: Option<bool>,
}

/// A conversion as the history shows it: the lead as it is now, the ad's
/// name from the catalog; never a hash.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionView {
    pub(crate) event_id: String,
    pub(crate) event_name: &'static str,
    /// The destination's slug (`meta`: the site's pixel).
    pub(crate) destination: String,
    pub(crate) lead_id: Option<String>,
    pub(crate) lead_label: Option<String>,
    pub(crate) ad_name: Option<String>,
    pub(crate) ad_id: Option<String>,
    pub(crate) value_cents: Option<i64>,
    pub(crate) status: &'static str,
    pub(crate) attempts: i64,
    pub(crate) last_error: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) sent_at: Option<i64>,
}

/// A site's conversions (with the next page's cursor), or a lead's.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionsView<'a> {
    pub(crate) site_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lead_key: Option<&'a str>,
    pub(crate) conversions: Vec<ConversionView>,
    /// The site's list: where the next page starts (`null`: no more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) next: Option<Option<ConversionsCursor>>,
}

/// Where the next page of a site's conversions starts.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConversionsCursor {
    pub(crate) before: i64,
    pub(crate) before_event_id: String,
}

/// `POST /v1/sites/{siteId}/events`: how many rows were queued, and per
/// event the destinations it was queued for, those that had it already,
/// and what of its contact was dropped.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PostedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) queued: usize,
    pub(crate) events: Vec<PostedEventView<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PostedEventView<'a> {
    pub(crate) event_id: &'a str,
    pub(crate) warnings: Vec<String>,
    pub(crate) queued: Vec<&'a str>,
    pub(crate) duplicate: Vec<&'a str>,
}

/// `DELETE /v1/sites/{siteId}/ad-accounts/{adAccountId}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnlinkedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) ad_account_id: &'a str,
    pub(crate) unlinked: bool,
}

/// What unlinking an account would take from the site's reports.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UnlinkPreviewView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) ad_account_id: &'a str,
    pub(crate) spend_cents: i64,
    pub(crate) currency: &'a str,
    pub(crate) days: usize,
    pub(crate) campaigns: usize,
    pub(crate) partial: bool,
}

/// `POST /v1/sites/{siteId}/sync`: how many accounts were asked to sync.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SyncRequestedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) requested: usize,
}

/// `PUT /v1/sites/{siteId}/pixel`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PixelSetView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) pixel: PixelView<'a>,
}

/// A removal that names only its site (the pixel).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RemovedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) removed: bool,
}

/// A Page linked to a site.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageLinkView<'a> {
    site_id: &'a str,
    page_id: &'a str,
    owner_key: &'a str,
    subscribed_at: i64,
}

impl<'a> PageLinkView<'a> {
    pub(crate) fn of(link: &'a PageLink) -> Self {
        Self {
            site_id: &link.site_id,
            page_id: &link.page_id,
            owner_key: &link.owner_key,
            subscribed_at: link.subscribed_at,
        }
    }
}

/// `DELETE /v1/sites/{siteId}/pages/{pageId}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PageUnlinkedView<'a> {
    pub(crate) site_id: &'a str,
    pub(crate) page_id: &'a str,
    pub(crate) removed: bool,
}
