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

/// One row of `insights?level=ad&time_increment=1`. The names (ad, ad set,
/// campaign) are on an ad's first row of a call only, `None` on its later
/// days: Meta repeats the same current names on each.
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

/// A Facebook Page the token's user has a role on, with the Page's own
/// token. Its `Debug` leaves the token out.
#[derive(Clone, PartialEq, Eq)]
pub struct Page {
    pub id: String,
    pub name: String,
    /// What the user may do on the Page (`ADVERTISE`, `MANAGE`, …).
    pub tasks: Vec<String>,
    pub access_token: Option<String>,
}

impl std::fmt::Debug for Page {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Page")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("tasks", &self.tasks)
            .field(
                "access_token",
                &self.access_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// One event for the Conversions API, in Meta's wire format. Its user data
/// is the contact: its `Debug` leaves it out.
#[derive(Clone, serde::Serialize, PartialEq)]
pub struct ServerEvent {
    pub event_name: String,
    /// Seconds.
    pub event_time: i64,
    pub event_id: String,
    pub action_source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_source_url: Option<String>,
    pub user_data: UserData,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_data: Option<CustomData>,
}

impl std::fmt::Debug for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerEvent")
            .field("event_name", &self.event_name)
            .field("event_id", &self.event_id)
            .finish_non_exhaustive()
    }
}

/// The contact, as Meta names it: SHA-256 digests, and the signals Meta
/// wants plain (IP, user agent, click and browser ids).
#[derive(Clone, Default, serde::Serialize, PartialEq)]
pub struct UserData {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub em: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ph: Vec<String>,
    #[serde(rename = "fn", skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    #[serde(rename = "ln", skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub external_id: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub country: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_ip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_user_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fbc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fbp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctwa_clid: Option<String>,
    /// A Lead Ads lead's id (Conversion Leads), never hashed: Meta's
    /// int64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_id: Option<u64>,
}

/// An event's value (in currency units) and order.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct CustomData {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_id: Option<String>,
    /// `crm` for Conversion Leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_source: Option<&'static str>,
    /// The CRM's name, for Conversion Leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead_event_source: Option<&'static str>,
}
