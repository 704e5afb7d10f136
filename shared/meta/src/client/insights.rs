//! Spend and the catalog: insights by ad and day (paged, capped), the ads
//! listing with creatives, and how each row is read and bounded.

use super::*;

impl GraphClient {
    /// Spend per ad and day for a range, every page up to
    /// [`MAX_INSIGHTS_PAGES`]. Meta's "too much data" comes back as an error
    /// of kind [`GraphErrorKind::TooMuchData`] for the caller to split.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn insights(
        &self,
        token: &str,
        account: &str,
        currency: &Currency,
        range: DateRange,
    ) -> Result<Insights, GraphError> {
        let time_range = format!(r#"{{"since":"{}","until":"{}"}}"#, range.since, range.until);
        let limit = INSIGHTS_PAGE_SIZE.to_string();
        let mut url = self.url(
            &format!("{account}/insights"),
            &[
                ("level", "ad"),
                ("time_increment", "1"),
                ("time_range", &time_range),
                ("fields", "ad_id,ad_name,adset_id,adset_name,campaign_id,campaign_name,spend,impressions,clicks"),
                ("limit", &limit),
            ],
        );
        let mut out = Insights {
            complete: true,
            ..Insights::default()
        };
        let mut named = std::collections::HashSet::new();
        for page_no in 0.. {
            if page_no == MAX_INSIGHTS_PAGES {
                out.complete = false;
                break;
            }
            let (json, usage) = self.get(url.clone(), token).await?;
            out.usage = out.usage.merge(usage);
            let page: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("insights page"))?;
            for v in &page.data {
                let mut row = parse_spend_row(v, currency, range)?;
                name_once(&mut row, &mut named);
                out.rows.push(row);
            }
            // A short or empty page can still have a next one: stop only
            // when `paging.next` is absent.
            match page.paging.and_then(|p| p.next) {
                Some(next) => url = self.next_url(&next)?,
                None => break,
            }
        }
        Ok(out)
    }

    /// `GET /act_…/ads` with creatives: every ad, or only `only` (at most
    /// 50 ids, for naming ads that brought leads).
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn ads(
        &self,
        token: &str,
        account: &str,
        only: Option<&[String]>,
    ) -> Result<Ads, GraphError> {
        let limit = ADS_PAGE_SIZE.to_string();
        let fields = "id,name,effective_status,adset{id,name},campaign{id,name},creative{object_type,thumbnail_url,object_story_spec}";
        let filtering = only.map(|ids| {
            serde_json::json!([{"field": "id", "operator": "IN", "value": ids}]).to_string()
        });
        let mut query = vec![
            ("fields", fields),
            ("limit", limit.as_str()),
            ("thumbnail_width", "320"),
            ("thumbnail_height", "320"),
        ];
        if let Some(f) = &filtering {
            query.push(("filtering", f));
        }
        let mut url = self.url(&format!("{account}/ads"), &query);
        let mut out = Ads::default();
        let mut limit = ADS_PAGE_SIZE;
        // The cap is on ads asked for, so shrunk pages read as far.
        let mut asked = 0;
        while asked < MAX_ADS_PAGES * ADS_PAGE_SIZE as usize {
            let (json, usage) = match self.get(url.clone(), token).await {
                Ok(answer) => answer,
                // Meta asks for less: the same page, half as long; the
                // next links carry the smaller limit on.
                Err(e) if too_much_data(&e) && limit > MIN_PAGE_LIMIT => {
                    limit = (limit / 2).max(MIN_PAGE_LIMIT);
                    url = with_limit(&url, limit);
                    continue;
                }
                Err(e) => return Err(e),
            };
            asked += limit as usize;
            out.usage = out.usage.merge(usage);
            let page: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("ads page"))?;
            out.ads.extend(page.data.iter().filter_map(parse_ad));
            match page.paging.and_then(|p| p.next) {
                Some(next) => url = self.next_url(&next)?,
                None => break,
            }
        }
        Ok(out)
    }
}

/// Meta repeats an ad's current names on each of its rows (a row a day);
/// a call keeps them on the ad's first row only, where the catalog learns
/// them, and leaves them `None` (nothing to learn) on the rest. A part of
/// 20,000 rows at the 400-character cap then holds each ad's names once,
/// not thirty times: measured on the sync worker's binary, two such parts
/// at once went from 158 MiB to a fraction of it (`tests/e2e/memory.rs`).
fn name_once(row: &mut SpendRow, named: &mut std::collections::HashSet<String>) {
    if !named.insert(row.ad_id.clone()) {
        row.ad_name = None;
        row.adset_name = None;
        row.campaign_name = None;
    }
}

pub(super) fn parse_spend_row(
    v: &Value,
    currency: &Currency,
    range: DateRange,
) -> Result<SpendRow, GraphError> {
    let ad_id = meta_id(v, "ad_id").ok_or_else(|| GraphError::malformed("ad id"))?;
    let date = v
        .get("date_start")
        .and_then(Value::as_str)
        .and_then(parse_date)
        .filter(|d| *d >= range.since && *d <= range.until)
        .ok_or_else(|| GraphError::malformed("row date"))?;
    let spend = v.get("spend").and_then(Value::as_str).unwrap_or("0");
    let spend_cents = currency
        .parse_minor(spend)
        .map_err(|_| GraphError::malformed("spend"))?;
    Ok(SpendRow {
        ad_name: text(v, "ad_name"),
        adset_id: meta_id(v, "adset_id"),
        adset_name: text(v, "adset_name"),
        campaign_id: meta_id(v, "campaign_id"),
        campaign_name: text(v, "campaign_name"),
        date,
        spend_cents,
        impressions: count(v, "impressions")?,
        clicks: count(v, "clicks")?,
        ad_id,
    })
}

pub(super) fn parse_ad(v: &Value) -> Option<Ad> {
    let id = meta_id(v, "id")?;
    let creative = v.get("creative");
    let spec = creative.and_then(|c| c.get("object_story_spec"));
    let object_type = creative
        .and_then(|c| c.get("object_type"))
        .and_then(Value::as_str);
    let carousel = spec
        .and_then(|s| s.pointer("/link_data/child_attachments"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.len() > 1);
    let creative_type = creative.map(|_| {
        if carousel {
            "carousel"
        } else if object_type == Some("VIDEO") || spec.and_then(|s| s.get("video_data")).is_some() {
            "video"
        } else if object_type == Some("PHOTO") || spec.and_then(|s| s.get("link_data")).is_some() {
            "image"
        } else {
            "other"
        }
        .to_owned()
    });
    let status = text(v, "effective_status")
        .filter(|s| s.len() <= 40 && s.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'));
    Some(Ad {
        name: text(v, "name"),
        adset_id: v.get("adset").and_then(|a| meta_id(a, "id")),
        adset_name: v.get("adset").and_then(|a| text(a, "name")),
        campaign_id: v.get("campaign").and_then(|a| meta_id(a, "id")),
        campaign_name: v.get("campaign").and_then(|a| text(a, "name")),
        effective_status: status,
        creative_type,
        thumbnail_url: creative
            .and_then(|c| c.get("thumbnail_url"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ads_names_come_once_a_call_on_its_first_row() {
        let range = DateRange {
            since: parse_date("2026-06-01").unwrap(),
            until: parse_date("2026-06-30").unwrap(),
        };
        let brl = Currency::parse("BRL").unwrap();
        let row = |ad: &str, day: &str| {
            serde_json::json!({"ad_id": ad, "ad_name": format!("Ad {ad}"), "adset_id": "7",
                "adset_name": "Set", "campaign_id": "6", "campaign_name": "Camp",
                "spend": "1.00", "impressions": "10", "clicks": "1", "date_start": day})
        };
        let mut named = std::collections::HashSet::new();
        let rows: Vec<SpendRow> = [
            ("1", "2026-06-01"),
            ("2", "2026-06-01"),
            ("1", "2026-06-02"),
        ]
        .iter()
        .map(|(ad, day)| {
            let mut r = parse_spend_row(&row(ad, day), &brl, range).unwrap();
            name_once(&mut r, &mut named);
            r
        })
        .collect();
        assert_eq!(rows[0].ad_name.as_deref(), Some("Ad 1"));
        assert_eq!(rows[1].campaign_name.as_deref(), Some("Camp"));
        let repeat = &rows[2];
        assert_eq!(
            (&repeat.ad_name, &repeat.adset_name, &repeat.campaign_name),
            (&None, &None, &None)
        );
        // Its ids and figures stay.
        assert_eq!(repeat.adset_id.as_deref(), Some("7"));
        assert_eq!((repeat.spend_cents, repeat.impressions), (100, 10));
    }
}
