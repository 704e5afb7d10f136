//! The items a sync run writes: catalog entries and spend figures.

use adtrail_domain::catalog::CatalogEntry;
use adtrail_domain::spend::SpendFigures;
use serde::Deserialize;

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
    pub(crate) thumbnail_key: Option<String>,
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
