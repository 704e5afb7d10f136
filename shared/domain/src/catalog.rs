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

/// A digest of what a run learnt of the catalog, given in ad id order: each
/// entry's every field, a field absent told from an empty one. Two runs of
/// an account that learnt the same have the same digest; any field that
/// differs makes another.
pub fn digest<'a>(entries: impl IntoIterator<Item = &'a CatalogEntry>) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(b"adtrail-catalog-v1");
    for e in entries {
        for field in [
            Some(&e.ad_id),
            e.ad_account_id.as_ref(),
            e.ad_name.as_ref(),
            e.adset_id.as_ref(),
            e.adset_name.as_ref(),
            e.campaign_id.as_ref(),
            e.campaign_name.as_ref(),
            e.ad_status.as_ref(),
            e.creative_type.as_ref(),
            e.thumbnail_key.as_ref(),
        ] {
            match field {
                // Length first: no two lists of fields run together alike.
                Some(v) => {
                    hash.update([1]);
                    hash.update((v.len() as u64).to_be_bytes());
                    hash.update(v.as_bytes());
                }
                None => hash.update([0]),
            }
        }
    }
    hex::encode(&hash.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(id: &str, name: Option<&str>) -> CatalogEntry {
        CatalogEntry {
            ad_id: id.into(),
            ad_name: name.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn the_digest_changes_with_any_field_and_only_then() {
        let a = [ad("1", Some("Ad 1")), ad("2", Some("Ad 2"))];
        assert_eq!(digest(&a), digest(&a.clone()));
        assert_eq!(digest(&a).len(), 32);
        let renamed = [ad("1", Some("Ad 1")), ad("2", Some("Ad 2b"))];
        let unnamed = [ad("1", Some("Ad 1")), ad("2", None)];
        let empty_name = [ad("1", Some("Ad 1")), ad("2", Some(""))];
        let fewer = [ad("1", Some("Ad 1"))];
        // Fields that run together alike: "1" + "Ad 12" against "11" + "Ad 2".
        let shifted = [ad("11", Some("Ad 1")), ad("2", Some("Ad 2"))];
        let mut paused = a.clone();
        paused[0].ad_status = Some("PAUSED".into());
        let digests = [
            digest(&a),
            digest(&renamed),
            digest(&unnamed),
            digest(&empty_name),
            digest(&fewer),
            digest(&shifted),
            digest(&paused),
            digest(&[]),
        ];
        let distinct: std::collections::HashSet<_> = digests.iter().collect();
        assert_eq!(distinct.len(), digests.len(), "{digests:?}");
    }
}
