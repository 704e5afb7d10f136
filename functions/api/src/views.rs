//! What the API shows of stored things: one typed view per thing, used by
//! every route that shows it, and never a token. Fields that only some
//! answers carry are `Option`s skipped when absent, so no route trims a
//! JSON map after building it.

use adtrail_domain::dates::Timezone;
use adtrail_domain::destinations::{Account, Destination, DestinationState, PIXEL_SLUG};
use adtrail_domain::identifiers::Platform;
use adtrail_domain::links::SiteAdAccount;
use adtrail_domain::pixels::SitePixel;
use adtrail_domain::plan::backfill_progress;
use adtrail_domain::spend::SpendFigures;
use adtrail_store::connections::{Connection, ListedAccount, ListedPixel};
use serde::Serialize;

mod answers;
mod forms;
mod leadads;
mod reads;
mod reports;
mod sites;
pub(crate) use answers::*;
pub(crate) use forms::{
    AnswerView, DayCount, Recent, form_lead_view, form_view, rules_view, simulation_view,
};
pub(crate) use leadads::*;
pub(crate) use reads::*;
pub(crate) use reports::*;
pub(crate) use sites::*;

/// An ad account as a connection lists it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountView<'a> {
    ad_account_id: &'a str,
    name: &'a str,
    currency: &'a str,
    timezone: &'a str,
    /// In the connection's own listing: the site the account feeds (`null`
    /// when none, or when that site is outside the caller's grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) linked_site_id: Option<Option<&'a str>>,
    /// Linked to a site the caller may not see.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) linked_outside_scope: Option<bool>,
}

impl<'a> AccountView<'a> {
    pub(crate) fn of(a: &'a ListedAccount) -> Self {
        Self {
            ad_account_id: &a.ad_account_id,
            name: &a.name,
            currency: &a.currency,
            timezone: &a.timezone,
            linked_site_id: None,
            linked_outside_scope: None,
        }
    }
}

/// A pixel a connection's token lists.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListedPixelView<'a> {
    pixel_id: &'a str,
    name: &'a str,
}

pub(crate) fn pixel_views(pixels: &[ListedPixel]) -> Vec<ListedPixelView<'_>> {
    pixels
        .iter()
        .map(|p| ListedPixelView {
            pixel_id: &p.pixel_id,
            name: &p.name,
        })
        .collect()
}

/// Who authorized a token (Meta's `/me`).
#[derive(Serialize)]
pub(crate) struct AuthorizedBy<'a> {
    pub(crate) id: &'a str,
    pub(crate) name: &'a str,
}

/// What a connect, a refresh or a login answers; a login adds how the
/// token was authorized and when it ends.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectedView<'a> {
    owner_key: &'a str,
    status: &'static str,
    ad_accounts: Vec<AccountView<'a>>,
    pixels: Vec<ListedPixelView<'a>>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub(crate) login: Option<LoginView<'a>>,
}

/// The fields only a login's answer carries.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoginView<'a> {
    pub(crate) authorized_by: AuthorizedBy<'a>,
    pub(crate) authorized_at: i64,
    pub(crate) expires_at: Option<i64>,
    pub(crate) expiring_soon: bool,
    pub(crate) last_error: Option<&'a str>,
}

pub(crate) fn connected_view(stored: &Connection) -> ConnectedView<'_> {
    ConnectedView {
        owner_key: &stored.owner_key,
        status: stored.status.as_str(),
        ad_accounts: stored.accounts.iter().map(AccountView::of).collect(),
        pixels: pixel_views(&stored.pixels),
        login: None,
    }
}

/// How far an account's first backfill has come, in days.
#[derive(Serialize)]
pub(crate) struct Progress {
    done: i64,
    total: i64,
}

/// A linked account's spend over an answer's range.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LinkSpend {
    synced: bool,
    spend_cents: Option<i64>,
    impressions: Option<i64>,
    clicks: Option<i64>,
}

/// A linked ad account as the status, link and spend answers show it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LinkView<'a> {
    ad_account_id: &'a str,
    name: &'a str,
    currency: &'a str,
    timezone: &'a str,
    sync_state: &'static str,
    last_sync_at: Option<i64>,
    last_error: Option<&'a str>,
    backfill: Option<Progress>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    spend: Option<LinkSpend>,
    /// In the status answer, for a caller acting as an owner: whether the
    /// link is its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) own: Option<bool>,
}

/// An account as the status and spend reads show it; `totals` (the spend
/// answer's) is `Some(None)` for an account not synced yet.
pub(crate) fn account_view(
    link: &SiteAdAccount,
    totals: Option<Option<SpendFigures>>,
) -> LinkView<'_> {
    let backfill = Timezone::parse(&link.timezone).and_then(|tz| {
        backfill_progress(
            link.last_sync_at,
            link.backfill_from
                .as_deref()
                .and_then(adtrail_domain::dates::parse_date),
            link.created_at,
            &tz,
        )
    });
    LinkView {
        ad_account_id: &link.ad_account_id,
        name: &link.name,
        currency: &link.currency,
        timezone: &link.timezone,
        sync_state: link.sync_state.as_str(),
        last_sync_at: link.last_sync_at,
        last_error: link.last_error.as_deref(),
        backfill: backfill.map(|(done, total)| Progress { done, total }),
        spend: totals.map(|t| LinkSpend {
            synced: link.synced(),
            spend_cents: t.map(|t| t.spend_cents),
            impressions: t.map(|t| t.impressions),
            clicks: t.map(|t| t.clicks),
        }),
        own: None,
    }
}

/// What `meta.status` and the pixel routes show of a pixel: never a token.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PixelView<'a> {
    enabled: bool,
    pixel_id: Option<&'a str>,
    source: Option<&'static str>,
    name: Option<&'a str>,
    last_error: Option<&'a str>,
    test_mode: bool,
    send_lead_event: bool,
    /// In the status answer, for a caller acting as an owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) own: Option<bool>,
}

pub(crate) fn pixel_view(pixel: Option<&SitePixel>) -> PixelView<'_> {
    match pixel {
        Some(p) => PixelView {
            enabled: p.enabled,
            pixel_id: Some(&p.pixel_id),
            source: Some(p.source_name()),
            name: Some(&p.name),
            last_error: p.last_error.as_deref(),
            test_mode: p.test_event_code.is_some(),
            send_lead_event: p.send_lead_event,
            own: None,
        },
        None => PixelView {
            enabled: false,
            pixel_id: None,
            source: None,
            name: None,
            last_error: None,
            test_mode: false,
            send_lead_event: false,
            own: None,
        },
    }
}

/// Bytes a long list may take in the document Lambda measures (an ad
/// list, the leads report's tree, a Page's forms, the forms report's rows):
/// with the rest of its answer, far below Lambda's 6 MB.
pub(crate) const LIST_BYTES: usize = 4_000_000;

/// The bytes `value` takes in the document Lambda measures against its
/// 6 MB: the answer's JSON is a string in it, so each `"` and `\` of the
/// JSON is escaped once more. A name of 400 quotes, which Meta allows,
/// takes 800 bytes in the body and 1,600 there.
pub(crate) fn answer_bytes<T: Serialize>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX / 2, |v| {
        v.len() + v.iter().filter(|b| matches!(b, b'"' | b'\\')).count()
    })
}

/// Keeps the leading rows that fit `budget` bytes of the document Lambda
/// measures ([`answer_bytes`]), so an answer never passes Lambda's 6 MB;
/// answers whether any was left out.
pub(crate) fn keep_within<T: Serialize>(rows: &mut Vec<T>, budget: usize) -> bool {
    let mut bytes = 0;
    let fits = rows
        .iter()
        .take_while(|r| {
            bytes += answer_bytes(r) + 1;
            bytes <= budget
        })
        .count();
    let cut = fits < rows.len();
    rows.truncate(fits);
    cut
}

/// Keeps the items that fit `budget` bytes of the document Lambda
/// measures, the most relevant first (highest `K`; ties in their order),
/// each kept one where it stood; answers whether any was left out.
pub(crate) fn keep_most_relevant<K: Ord, T: Serialize>(
    items: &mut Vec<(K, T)>,
    budget: usize,
) -> bool {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|a, b| items[*b].0.cmp(&items[*a].0));
    let mut keep = vec![false; items.len()];
    let mut bytes = 0;
    for i in order {
        bytes += answer_bytes(&items[i].1) + 1;
        if bytes > budget {
            break;
        }
        keep[i] = true;
    }
    let before = items.len();
    let mut kept = keep.into_iter();
    items.retain(|_| kept.next().unwrap_or(false));
    items.len() < before
}

#[cfg(test)]
mod keep_within_tests {
    use super::keep_within;

    #[test]
    fn rows_past_the_budget_are_left_out_and_said() {
        let mut rows = vec!["a".repeat(10); 10];
        assert!(!keep_within(&mut rows, 1_000));
        assert_eq!(rows.len(), 10);
        // Each row is 12 bytes of JSON, its quotes escaped once more (14
        // in Lambda's document), and a comma.
        assert!(keep_within(&mut rows, 50));
        assert_eq!(rows.len(), 3);
    }

    /// The least relevant leave first; the kept stay in their order.
    #[test]
    fn the_least_relevant_leave_first_and_the_rest_keep_their_order() {
        let mut items: Vec<(u8, String)> = [3, 1, 4, 1, 5]
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, format!("{i}")))
            .collect();
        // Each item is 3 bytes of JSON, 5 in Lambda's document, and a comma.
        assert!(super::keep_most_relevant(&mut items, 18));
        assert_eq!(
            items,
            vec![(3, "0".into()), (4, "2".into()), (5, "4".into())]
        );
        assert!(!super::keep_most_relevant(&mut items, 18));
    }

    /// Quotes and backslashes count twice: once escaped in the JSON, once
    /// more in Lambda's document.
    #[test]
    fn a_row_counts_what_it_takes_escaped_in_lambdas_document() {
        assert_eq!(super::answer_bytes(&"ab"), 4 + 2);
        assert_eq!(super::answer_bytes(&"\"\""), 6 + 2 + 4);
        let mut rows = vec!["\"".repeat(100); 10];
        // 202 bytes of JSON a row, 404 in the document.
        assert!(keep_within(&mut rows, 1_000));
        assert_eq!(rows.len(), 2);
    }
}

/// A destination as the destination routes and `meta.status` show it:
/// the platform's ids, the test mode and the state, never a credential.
/// The site's pixel shows as the destination `meta` (`via: "pixel"`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DestinationView<'a> {
    slug: &'a str,
    platform: &'static str,
    /// `active`, `disabled`, `stopped` (credentials refused) or `archived`.
    state: &'static str,
    enabled: bool,
    /// `destinations` or `pixel`: which routes manage it.
    via: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pixel_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pixel_code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ad_account_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operating_account: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    login_account: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conversion_actions: Option<std::collections::BTreeMap<&'static str, &'a str>>,
    test_mode: bool,
    last_error: Option<&'a str>,
    created_at: Option<i64>,
    updated_at: i64,
    archived_at: Option<i64>,
}

pub(crate) fn destination_view(d: &Destination) -> DestinationView<'_> {
    let mut view = DestinationView {
        slug: &d.slug,
        platform: d.account.platform().as_str(),
        state: d.state().as_str(),
        enabled: d.enabled,
        via: "destinations",
        pixel_id: None,
        pixel_code: None,
        ad_account_id: None,
        operating_account: None,
        login_account: None,
        conversion_actions: None,
        test_mode: d.account.in_test_mode(),
        last_error: d.last_error.as_deref(),
        created_at: Some(d.created_at),
        updated_at: d.updated_at,
        archived_at: d.archived_at,
    };
    match &d.account {
        Account::Meta { pixel_id, .. } | Account::Snap { pixel_id, .. } => {
            view.pixel_id = Some(pixel_id);
        }
        Account::TikTok { pixel_code, .. } => view.pixel_code = Some(pixel_code),
        Account::Pinterest { ad_account_id, .. } => view.ad_account_id = Some(ad_account_id),
        Account::Google {
            operating_account,
            login_account,
            conversion_actions,
            ..
        } => {
            view.operating_account = Some(operating_account);
            view.login_account = Some(login_account);
            view.conversion_actions = Some(
                conversion_actions
                    .iter()
                    .map(|(e, id)| (e.wire(), id.as_str()))
                    .collect(),
            );
        }
    }
    view
}

/// The site's pixel among its destinations.
pub(crate) fn pixel_destination_view(p: &SitePixel) -> DestinationView<'_> {
    let state = if p.stopped || p.not_granted {
        DestinationState::Stopped
    } else if !p.enabled {
        DestinationState::Disabled
    } else {
        DestinationState::Active
    };
    DestinationView {
        slug: PIXEL_SLUG,
        platform: Platform::Meta.as_str(),
        state: state.as_str(),
        enabled: p.enabled,
        via: "pixel",
        pixel_id: Some(&p.pixel_id),
        pixel_code: None,
        ad_account_id: None,
        operating_account: None,
        login_account: None,
        conversion_actions: None,
        test_mode: p.test_event_code.is_some(),
        last_error: p.last_error.as_deref(),
        created_at: None,
        updated_at: p.updated_at,
        archived_at: None,
    }
}
