//! What the client reads from Meta, already validated and in our units.

use adtrail_domain::graph_error::Usage;

/// `/me`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    pub id: String,
    pub name: String,
}

/// An ad account the token lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdAccount {
    pub id: String,
    pub name: String,
    pub currency: String,
    pub timezone: String,
}

/// One row of `insights?level=ad&time_increment=1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendRow {
    pub ad_id: String,
    pub ad_name: Option<String>,
    pub adset_id: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_id: Option<String>,
    pub campaign_name: Option<String>,
    /// The account-local date, `YYYY-MM-DD`.
    pub date: adtrail_domain::LocalDate,
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
}

/// A range's rows, and whether Meta gave all of them.
#[derive(Debug, Clone, Default)]
pub struct Insights {
    pub rows: Vec<SpendRow>,
    /// False when the page cap stopped the read with `paging.next` left.
    pub complete: bool,
    pub usage: Usage,
}

/// One ad of `/act_…/ads`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ad {
    pub id: String,
    pub name: Option<String>,
    pub adset_id: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_id: Option<String>,
    pub campaign_name: Option<String>,
    pub effective_status: Option<String>,
    /// `video`, `image`, `carousel` or `other`.
    pub creative_type: Option<String>,
    pub thumbnail_url: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct Ads {
    pub ads: Vec<Ad>,
    pub usage: Usage,
}

/// A fetched thumbnail.
#[derive(Debug, Clone)]
pub struct Thumbnail {
    pub bytes: Vec<u8>,
    pub content_type: String,
}

/// A pixel (dataset) an ad account owns, or one a token reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixel {
    pub id: String,
    pub name: String,
}
