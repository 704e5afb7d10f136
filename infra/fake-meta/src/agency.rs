//! The sample agency: accounts, their ads, and the spend of every ad-day.

use chrono::NaiveDate;
use sha2::{Digest, Sha256};

pub const ME_ID: &str = "100000000000001";
pub const ME_NAME: &str = "Sample Agency";

#[derive(Debug, Clone)]
pub struct SampleAccount {
    pub id: String,
    pub name: &'static str,
    pub currency: &'static str,
    pub timezone: &'static str,
    pub ads: Vec<SampleAd>,
    /// The pixels (datasets) the account owns: `(id, name)`.
    pub pixels: Vec<(&'static str, &'static str)>,
}

/// Loja X's pixel, owned by both of its accounts (a connect lists it once).
pub const LOJA_PIXEL: (&str, &str) = ("1100000000000001", "Loja X Pixel");
/// The sample agency's Facebook Pages: `(id, name, tasks)`. Loja X's Page
/// can advertise (so its form leads can be read); Pet Mania's only
/// analyse.
pub const SAMPLE_PAGES: [(&str, &str, &[&str]); 2] = [
    (
        "100200300",
        "Loja X",
        &[
            "ADVERTISE",
            "ANALYZE",
            "CREATE_CONTENT",
            "MESSAGING",
            "MODERATE",
            "MANAGE",
        ],
    ),
    ("900800700", "Pet Mania", &["ANALYZE"]),
];

/// Loja X's Page, whose form leads the demo and the tests read.
pub const LOJA_PAGE: &str = "100200300";

/// The Page access token the fake gives `page` (the prefix Meta's Page
/// tokens share).
pub fn page_token(page: &str) -> String {
    format!("EAAP-page-token-{page}")
}

/// Pet Mania's pixel, owned by its East account.
pub const PET_PIXEL: (&str, &str) = ("1100000000000002", "Pet Mania Pixel");

#[derive(Debug, Clone)]
pub struct SampleAd {
    pub id: String,
    pub name: String,
    pub adset_id: String,
    pub adset_name: String,
    pub campaign_id: String,
    pub campaign_name: String,
    pub status: &'static str,
    /// `VIDEO`, `PHOTO` or a carousel (`SHARE` with cards).
    pub object_type: &'static str,
    pub carousel: bool,
}

const ACCOUNTS: [(&str, &str, &str, &str); 4] = [
    (
        "act_1029384756",
        "Loja X · Principal",
        "BRL",
        "America/Sao_Paulo",
    ),
    ("act_1029384757", "Loja X · Manaus", "BRL", "America/Manaus"),
    (
        "act_2038475610",
        "Pet Mania · East",
        "USD",
        "America/New_York",
    ),
    (
        "act_2038475611",
        "Pet Mania · West",
        "USD",
        "America/Los_Angeles",
    ),
];

/// The four accounts with their catalog.
pub fn sample_accounts() -> Vec<SampleAccount> {
    ACCOUNTS
        .iter()
        .enumerate()
        .map(|(i, (id, name, currency, timezone))| {
            let base = 120_200_000_000_000u64 + (i as u64 + 1) * 100_000;
            let mut ads = vec![];
            for c in 1..=3u64 {
                for s in 1..=2u64 {
                    for a in 1..=4u64 {
                        let n = (c - 1) * 8 + (s - 1) * 4 + a;
                        ads.push(SampleAd {
                            id: (base + c * 1_000 + s * 100 + a).to_string(),
                            name: format!("{name} · Ad {n}"),
                            adset_id: (base + c * 1_000 + s * 100).to_string(),
                            adset_name: format!("Ad set {c}.{s}"),
                            campaign_id: (base + c * 1_000).to_string(),
                            campaign_name: format!("Campaign {c}"),
                            status: if a == 4 { "PAUSED" } else { "ACTIVE" },
                            object_type: match a {
                                1 => "VIDEO",
                                3 => "SHARE",
                                _ => "PHOTO",
                            },
                            carousel: a == 3,
                        });
                    }
                }
            }
            let pixels = match i {
                0 | 1 => vec![LOJA_PIXEL],
                2 => vec![PET_PIXEL],
                _ => vec![],
            };
            SampleAccount {
                id: (*id).to_owned(),
                name,
                currency,
                timezone,
                ads,
                pixels,
            }
        })
        .collect()
}

/// What an ad spent on a date, in minor units, with impressions and clicks;
/// `None` for an ad-day with nothing (Meta leaves it out).
pub fn ad_day(ad_id: &str, date: NaiveDate) -> Option<(i64, i64, i64)> {
    let digest = Sha256::digest(format!("{ad_id}:{date}").as_bytes());
    let h = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    if h % 5 == 0 {
        return None;
    }
    let spend = 300 + (h >> 8) as i64 % 9_700;
    let impressions = spend * (4 + (h >> 24) as i64 % 8) / 10 + 10;
    let clicks = impressions / (20 + (h >> 32) as i64 % 40);
    Some((spend, impressions, clicks))
}

/// Minor units as Meta's decimal string, for a currency with cents.
pub fn decimal(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}
