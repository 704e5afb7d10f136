//! What the catalog knows of an ad: its campaign → ad set → ad names and
//! ids, status, creative type and thumbnail, merged from what sync runs
//! learn.

/// What the catalog knows of an ad.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogEntry {
    pub ad_id: String,
    pub ad_account_id: Option<String>,
    pub ad_name: Option<String>,
    pub adset_id: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_id: Option<String>,
    pub campaign_name: Option<String>,
    pub ad_status: Option<String>,
    pub creative_type: Option<String>,
    pub thumbnail_key: Option<String>,
}

impl CatalogEntry {
    /// Fills the fields `other` has, keeping the rest.
    pub fn merge(&mut self, other: &CatalogEntry) {
        let pick = |mine: &mut Option<String>, theirs: &Option<String>| {
            if theirs.is_some() {
                mine.clone_from(theirs);
            }
        };
        pick(&mut self.ad_name, &other.ad_name);
        pick(&mut self.adset_id, &other.adset_id);
        pick(&mut self.adset_name, &other.adset_name);
        pick(&mut self.campaign_id, &other.campaign_id);
        pick(&mut self.campaign_name, &other.campaign_name);
        pick(&mut self.ad_status, &other.ad_status);
        pick(&mut self.creative_type, &other.creative_type);
    }
}
