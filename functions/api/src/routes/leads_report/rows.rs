//! The leads report's rows, typed: counters and spend ([`Counts`]), and
//! where the spend bought the leads, the derived metrics too
//! ([`Figures`]); the campaign → ad set → ad tree built from ad rows.

use std::collections::BTreeMap;

use adtrail_domain::metrics::{Counters, ReturnBand, derive, return_band};
use adtrail_domain::spend::SpendFigures;
use serde::Serialize;

use crate::views::answer_bytes;

/// Spend, impressions and clicks of a row, each `None` when unknown.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Paid {
    pub(super) spend_cents: Option<i64>,
    impressions: Option<i64>,
    clicks: Option<i64>,
}

impl Paid {
    pub(super) fn known(f: SpendFigures, money: bool) -> Self {
        Self {
            spend_cents: money.then_some(f.spend_cents),
            impressions: Some(f.impressions),
            clicks: Some(f.clicks),
        }
    }
    /// The sum of rows: unknown as soon as one part is.
    fn sum<'a>(parts: impl IntoIterator<Item = &'a Paid>) -> Self {
        let mut total = Self {
            spend_cents: Some(0),
            impressions: Some(0),
            clicks: Some(0),
        };
        for p in parts {
            total.spend_cents = total.spend_cents.zip(p.spend_cents).map(|(a, b)| a + b);
            total.impressions = total.impressions.zip(p.impressions).map(|(a, b)| a + b);
            total.clicks = total.clicks.zip(p.clicks).map(|(a, b)| a + b);
        }
        total
    }
}

/// Counters and spend alone: the rows that include organic leads (the
/// totals, a site's own), where a cost would flatter the ads.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Counts {
    leads: i64,
    qualified: i64,
    won: i64,
    revenue_cents: i64,
    spend_cents: Option<i64>,
    impressions: Option<i64>,
    clicks: Option<i64>,
}

impl Counts {
    pub(super) fn of(c: &Counters, paid: Paid) -> Self {
        Self {
            leads: c.leads,
            qualified: c.qualified,
            won: c.won,
            revenue_cents: c.revenue_cents,
            spend_cents: paid.spend_cents,
            impressions: paid.impressions,
            clicks: paid.clicks,
        }
    }
}

/// A row's counters, its spend and, where the spend bought its leads
/// (`bought`), the derived metrics; `null` otherwise.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Figures {
    #[serde(flatten)]
    counts: Counts,
    cost_per_lead_cents: Option<i64>,
    cost_per_qualified_cents: Option<i64>,
    cost_per_sale_cents: Option<i64>,
    return_on_spend: Option<f64>,
    return_band: Option<&'static str>,
}

impl Figures {
    pub(super) fn of(c: &Counters, paid: Paid, bought: bool) -> Self {
        let derived = derive(paid.spend_cents.filter(|_| bought), c);
        Self {
            counts: Counts::of(c, paid),
            cost_per_lead_cents: derived.cost_per_lead_cents,
            cost_per_qualified_cents: derived.cost_per_qualified_cents,
            cost_per_sale_cents: derived.cost_per_sale_cents,
            return_on_spend: derived.return_on_spend,
            return_band: return_band(derived.return_on_spend).map(ReturnBand::as_str),
        }
    }
}

/// An origin's row.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OriginRow {
    pub(super) origin: String,
    #[serde(flatten)]
    pub(super) figures: Figures,
}

/// A site's row, in request order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SiteRow {
    pub(super) site_id: String,
    pub(super) currency: String,
    pub(super) spend_currency: Option<String>,
    pub(super) currency_mismatch: bool,
    #[serde(flatten)]
    pub(super) counts: Counts,
    /// Its paid origins' leads next to its spend.
    pub(super) paid: Figures,
}

/// One ad of the tree.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AdView {
    pub(super) ad_id: String,
    pub(super) ad_name: Option<String>,
    pub(super) site_id: String,
    pub(super) creative_type: Option<String>,
    pub(super) ad_status: Option<String>,
    /// A presigned S3 GET of its thumbnail, good for 15 minutes.
    pub(super) thumbnail_url: Option<String>,
    #[serde(flatten)]
    pub(super) figures: Figures,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct AdsetView {
    adset_id: Option<String>,
    adset_name: Option<String>,
    #[serde(flatten)]
    figures: Figures,
    ads: Vec<AdView>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CampaignView {
    campaign_id: Option<String>,
    campaign_name: Option<String>,
    #[serde(flatten)]
    figures: Figures,
    adsets: Vec<AdsetView>,
}

/// The whole answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LeadsReport {
    pub(super) site_ids: Vec<String>,
    pub(super) from: i64,
    pub(super) to: i64,
    /// The sites' currency, `null` when they bill in different ones.
    pub(super) currency: Option<String>,
    pub(super) spend_currency: Option<String>,
    pub(super) currency_mismatch: bool,
    pub(super) spend_incomplete: bool,
    /// Ad rows were left out so the answer fits Lambda's 6 MB (the groups
    /// kept keep their full sums).
    pub(super) ads_truncated: bool,
    /// Ad sets or campaigns (those that spent least) were left out too, so
    /// the tree no longer adds up to the totals.
    pub(super) groups_truncated: bool,
    pub(super) totals: Counts,
    pub(super) origins: Vec<OriginRow>,
    pub(super) campaigns: Vec<CampaignView>,
    pub(super) by_site: Vec<SiteRow>,
}

/// What [`keep_tree_within`] left out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TreeCut {
    /// Ad rows.
    pub(super) ads: bool,
    /// Ad sets or campaigns (with their ads).
    pub(super) groups: bool,
}

/// Keeps what of the tree fits `budget` bytes of the document Lambda
/// measures ([`answer_bytes`]). The groups come first: every campaign and
/// ad set, with its sums, in the tree's order (most spend first) while
/// they fit; then the ad rows, walking the kept tree in its order, so the
/// ads that spent least go first. A year of a large account can hold
/// thousands of ad sets, each in a campaign of its own, with names of 400
/// characters: their rows alone can pass 6 MB.
pub(super) fn keep_tree_within(campaigns: &mut Vec<CampaignView>, budget: usize) -> TreeCut {
    let count_ads = |campaigns: &[CampaignView]| -> usize {
        campaigns
            .iter()
            .flat_map(|c| &c.adsets)
            .map(|s| s.ads.len())
            .sum()
    };
    let ads_before = count_ads(campaigns);
    let mut bytes = 0;
    let mut cut = TreeCut::default();
    let mut kept = 0;
    for campaign in campaigns.iter_mut() {
        let adsets = std::mem::take(&mut campaign.adsets);
        let head = answer_bytes(&*campaign) + 1;
        campaign.adsets = adsets;
        if bytes + head > budget {
            cut.groups = true;
            break;
        }
        bytes += head;
        kept += 1;
        let mut sets = 0;
        for adset in &mut campaign.adsets {
            let ads = std::mem::take(&mut adset.ads);
            let n = answer_bytes(&*adset) + 1;
            adset.ads = ads;
            if bytes + n > budget {
                break;
            }
            bytes += n;
            sets += 1;
        }
        if sets < campaign.adsets.len() {
            campaign.adsets.truncate(sets);
            cut.groups = true;
            break;
        }
    }
    campaigns.truncate(kept);
    let mut full = false;
    for adset in campaigns.iter_mut().flat_map(|c| c.adsets.iter_mut()) {
        let mut keep = 0;
        for ad in &adset.ads {
            let n = answer_bytes(ad) + 1;
            if full || bytes + n > budget {
                full = true;
                break;
            }
            bytes += n;
            keep += 1;
        }
        adset.ads.truncate(keep);
    }
    cut.ads = count_ads(campaigns) < ads_before;
    cut
}

/// One ad of the tree, before it is grouped.
pub(super) struct AdRow {
    pub(super) campaign: (Option<String>, Option<String>),
    pub(super) adset: (Option<String>, Option<String>),
    pub(super) view: AdView,
    pub(super) counters: Counters,
    pub(super) paid: Paid,
}

/// Sums of a group's children.
fn sums<'a>(children: impl Iterator<Item = (&'a Paid, &'a Counters)> + Clone) -> (Paid, Counters) {
    let paid = Paid::sum(children.clone().map(|(p, _)| p));
    let mut counters = Counters::default();
    for (_, c) in children {
        counters.add(c);
    }
    (paid, counters)
}

/// Groups ads into ad sets and campaigns (ads the catalog does not know yet
/// sit under a `null` campaign and ad set), each level summing its children;
/// most spend first, then most leads.
pub(super) fn tree(ads: Vec<AdRow>) -> Vec<CampaignView> {
    /// An ad set's name and ads, by id.
    type AdSets = BTreeMap<Option<String>, (Option<String>, Vec<AdRow>)>;
    let mut campaigns: BTreeMap<Option<String>, (Option<String>, AdSets)> = BTreeMap::new();
    for ad in ads {
        let (cid, cname) = ad.campaign.clone();
        let (aid, aname) = ad.adset.clone();
        let c = campaigns
            .entry(cid)
            .or_insert_with(|| (cname, BTreeMap::new()));
        c.1.entry(aid).or_insert_with(|| (aname, vec![])).1.push(ad);
    }
    let mut out: Vec<(Paid, Counters, CampaignView)> = vec![];
    for (cid, (cname, adsets)) in campaigns {
        let mut sets: Vec<(Paid, Counters, AdsetView)> = vec![];
        for (aid, (aname, mut rows)) in adsets {
            rows.sort_by(|a, b| order(&(b.paid, b.counters), &(a.paid, a.counters)));
            let (paid, counters) = sums(rows.iter().map(|r| (&r.paid, &r.counters)));
            let view = AdsetView {
                adset_id: aid,
                adset_name: aname,
                figures: Figures::of(&counters, paid, true),
                ads: rows.into_iter().map(|r| r.view).collect(),
            };
            sets.push((paid, counters, view));
        }
        sets.sort_by(|a, b| order(&(b.0, b.1), &(a.0, a.1)));
        let (paid, counters) = sums(sets.iter().map(|s| (&s.0, &s.1)));
        let view = CampaignView {
            campaign_id: cid,
            campaign_name: cname,
            figures: Figures::of(&counters, paid, true),
            adsets: sets.into_iter().map(|s| s.2).collect(),
        };
        out.push((paid, counters, view));
    }
    out.sort_by(|a, b| order(&(b.0, b.1), &(a.0, a.1)));
    out.into_iter().map(|r| r.2).collect()
}

/// Ascending by spend (unknown lowest), then leads.
fn order(a: &(Paid, Counters), b: &(Paid, Counters)) -> std::cmp::Ordering {
    (a.0.spend_cents, a.1.leads).cmp(&(b.0.spend_cents, b.1.leads))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ad(i: usize, campaign: &str, spend: i64) -> AdRow {
        let paid = Paid {
            spend_cents: Some(spend),
            ..Paid::default()
        };
        let counters = Counters::default();
        AdRow {
            campaign: (Some(campaign.into()), None),
            adset: (Some(format!("{campaign}-set")), None),
            view: AdView {
                ad_id: format!("ad{i}"),
                ad_name: Some("x".repeat(50)),
                site_id: "s".into(),
                creative_type: None,
                ad_status: None,
                thumbnail_url: None,
                figures: Figures::of(&counters, paid, true),
            },
            counters,
            paid,
        }
    }

    /// What a campaign and its first ad set take without their ads, as
    /// [`keep_tree_within`] counts them.
    fn group_bytes(c: &CampaignView) -> usize {
        let mut c = c.clone();
        c.adsets[0].ads.clear();
        let set = answer_bytes(&c.adsets[0]) + 1;
        c.adsets.clear();
        answer_bytes(&c) + 1 + set
    }

    #[test]
    fn ads_past_the_budget_leave_the_tree_and_the_groups_keep_their_sums() {
        let rows: Vec<AdRow> = (0..10)
            .map(|i| {
                ad(
                    i,
                    if i < 5 { "big" } else { "small" },
                    if i < 5 { 1_000 } else { 10 },
                )
            })
            .collect();
        let mut whole = tree(rows);
        let before = serde_json::to_value(&whole).unwrap();
        assert_eq!(
            keep_tree_within(&mut whole.clone(), 1_000_000),
            TreeCut::default()
        );
        let groups = group_bytes(&whole[0]) + group_bytes(&whole[1]);
        let one = answer_bytes(&whole[0].adsets[0].ads[0]) + 1;
        assert_eq!(
            keep_tree_within(&mut whole, groups + one * 6),
            TreeCut {
                ads: true,
                groups: false
            }
        );
        let ads: Vec<usize> = whole.iter().map(|c| c.adsets[0].ads.len()).collect();
        assert_eq!(ads, vec![5, 1], "the big campaign's ads first");
        let after = serde_json::to_value(&whole).unwrap();
        for c in 0..2 {
            assert_eq!(
                after[c]["spendCents"], before[c]["spendCents"],
                "a campaign keeps its sum"
            );
        }
    }

    /// Past the budget even without ads, the ad sets and campaigns that
    /// spent least leave too, and the answer says so.
    #[test]
    fn groups_past_the_budget_leave_after_every_ad() {
        let rows: Vec<AdRow> = (0..10)
            .map(|i| ad(i, &format!("c{i}"), 1_000 - i as i64))
            .collect();
        let mut whole = tree(rows);
        let budget: usize = whole[..3].iter().map(group_bytes).sum();
        assert_eq!(
            keep_tree_within(&mut whole, budget),
            TreeCut {
                ads: true,
                groups: true
            }
        );
        let kept: Vec<_> = whole
            .iter()
            .map(|c| (c.campaign_id.clone().unwrap(), c.adsets.len()))
            .collect();
        // The three campaigns that spent most, with their ad sets and
        // without their ads.
        assert_eq!(
            kept,
            vec![("c0".into(), 1), ("c1".into(), 1), ("c2".into(), 1)]
        );
        assert!(
            whole
                .iter()
                .flat_map(|c| &c.adsets)
                .all(|s| s.ads.is_empty())
        );
        assert!(answer_bytes(&whole) <= budget);
    }
}
