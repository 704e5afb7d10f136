//! What a run learns of the catalog (campaign → ad set → ad names, status,
//! creative type) from insights rows and the ads listing, saved under the
//! run's lease with the thumbnails copied to S3, and the names of ads that
//! brought leads.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use adtrail_domain::catalog::CatalogEntry;
use adtrail_store::blobs::thumbnail_key;
use adtrail_store::lease::LeaseCondition;
use futures::StreamExt;

use crate::Worker;
use crate::run::{MAX_ADS_NAMED_PER_RUN, MAX_THUMBNAILS_PER_RUN, RunReport, Stop};

/// Thumbnails copied at once.
const THUMBNAIL_CONCURRENCY: usize = 8;
/// Ads that brought a lead this recently are named by live runs.
const LEAD_ADS_WINDOW_MS: i64 = 7 * adtrail_domain::time::DAY_MS;

/// What an insights row says of its ad.
pub(crate) fn entry_of_row(row: &adtrail_meta::SpendRow) -> CatalogEntry {
    CatalogEntry {
        ad_id: row.ad_id.clone(),
        ad_name: row.ad_name.clone(),
        adset_id: row.adset_id.clone(),
        adset_name: row.adset_name.clone(),
        campaign_id: row.campaign_id.clone(),
        campaign_name: row.campaign_name.clone(),
        ..Default::default()
    }
}

/// What the ads listing says of an ad.
pub(crate) fn entry_of_ad(ad: adtrail_meta::Ad) -> CatalogEntry {
    CatalogEntry {
        ad_id: ad.id,
        ad_name: ad.name,
        adset_id: ad.adset_id,
        adset_name: ad.adset_name,
        campaign_id: ad.campaign_id,
        campaign_name: ad.campaign_name,
        ad_status: ad.effective_status,
        creative_type: ad.creative_type,
        ..Default::default()
    }
}

impl Worker {
    /// Merges what the run learnt into the catalog (only entries that
    /// change), then copies thumbnails the catalog lacks, starting none
    /// past `stop_at` (those left are copied by a later run).
    pub(crate) async fn save_catalog(
        &self,
        cond: &LeaseCondition,
        learnt: BTreeMap<String, CatalogEntry>,
        thumbnails: HashMap<String, String>,
        now: i64,
        stop_at: Instant,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        // An account that delivered nothing taught the run nothing: no
        // read of the site's catalog.
        if learnt.is_empty() {
            return Ok(());
        }
        // Read eventually: a write of the last second missed costs a write
        // again, never a field (the merge sets only what Meta sent).
        let ads = learnt.keys().map(String::as_str).collect();
        let stored = self
            .store
            .catalog()
            .entries_of(cond.site_id(), &ads)
            .await?;
        let mut changed = vec![];
        let mut need_thumbnail = vec![];
        for (ad, entry) in learnt {
            let current = stored.get(&ad);
            let mut merged = current.cloned().unwrap_or_else(|| CatalogEntry {
                ad_id: ad.clone(),
                ..Default::default()
            });
            merged.merge(&entry);
            let mine =
                current.and_then(|c| c.ad_account_id.as_deref()) == Some(cond.ad_account_id());
            if current != Some(&merged) || !mine {
                changed.push(entry);
            }
            if current.is_none_or(|c| c.thumbnail_key.is_none())
                && let Some(url) = thumbnails.get(&ad)
            {
                need_thumbnail.push((ad, url.clone()));
            }
        }
        if !self
            .store
            .catalog()
            .upsert_catalog(cond, &changed, now)
            .await?
        {
            return Err(Stop::LostLease);
        }
        need_thumbnail.truncate(MAX_THUMBNAILS_PER_RUN);
        let copies = futures::stream::iter(need_thumbnail)
            .map(|(ad, url)| async move {
                if Instant::now() >= stop_at {
                    return Ok(None);
                }
                let Some(thumb) = self.graph.thumbnail(&url).await else {
                    return Ok(None);
                };
                let key = thumbnail_key(cond.site_id(), &ad);
                self.store
                    .blobs()
                    .put_thumbnail(&key, thumb.bytes, &thumb.content_type)
                    .await?;
                Ok::<_, adtrail_store::StoreError>(Some((ad, key)))
            })
            .buffer_unordered(THUMBNAIL_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        let mut stored = vec![];
        for copy in copies {
            stored.extend(copy?);
        }
        // The catalog learns them all at once: one transaction per 99.
        if !self.store.catalog().set_thumbnails(cond, &stored).await? {
            return Err(Stop::LostLease);
        }
        report.thumbnails += stored.len();
        Ok(())
    }

    /// Names the ads that brought the site leads in the last 7 days and have
    /// no name yet, at most [`MAX_ADS_NAMED_PER_RUN`]: Meta is asked for them
    /// by id through this run's account, so an ad of another account never
    /// comes back, and an ad the catalog files under another account is
    /// left to that account's runs. Best effort: Meta failing here leaves
    /// the run's outcome as it was.
    pub(crate) async fn name_lead_ads(
        &self,
        token: &str,
        cond: &LeaseCondition,
        now: i64,
        report: &mut RunReport,
    ) -> Result<(), Stop> {
        let site = cond.site_id();
        let ads = self
            .store
            .leads()
            .recent_lead_ads(site, now - LEAD_ADS_WINDOW_MS, 1_000)
            .await?;
        if ads.is_empty() {
            return Ok(());
        }
        // Read eventually: a name written in the last second and missed is
        // asked of Meta and written again, nothing worse.
        let asked = ads.iter().map(String::as_str).collect();
        let known = self.store.catalog().entries_of(site, &asked).await?;
        let unnamed: Vec<String> = ads
            .into_iter()
            .filter(|ad| match known.get(ad) {
                None => true,
                Some(e) => {
                    e.ad_name.is_none()
                        && e.ad_account_id
                            .as_deref()
                            .is_none_or(|a| a == cond.ad_account_id())
                }
            })
            .take(MAX_ADS_NAMED_PER_RUN)
            .collect();
        if unnamed.is_empty() {
            return Ok(());
        }
        let listed = match self
            .graph
            .ads(token, cond.ad_account_id(), Some(&unnamed))
            .await
        {
            Ok(listed) => listed,
            Err(error) => {
                tracing::warn!(error = %error, "could not name the ads that brought leads");
                return Ok(());
            }
        };
        let entries: Vec<CatalogEntry> = listed
            .ads
            .into_iter()
            .filter(|ad| unnamed.contains(&ad.id) && ad.name.is_some())
            .map(entry_of_ad)
            .collect();
        if entries.is_empty() {
            return Ok(());
        }
        if !self
            .store
            .catalog()
            .upsert_catalog(cond, &entries, now)
            .await?
        {
            return Err(Stop::LostLease);
        }
        report.ads_named += entries.len();
        Ok(())
    }
}
