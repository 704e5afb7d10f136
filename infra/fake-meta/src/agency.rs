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

/// `n` ads beyond `acc`'s own ([`crate::Knobs::wide_ads`]): ids of their
/// own per account, each name padded to 400 characters.
pub fn wide_ads(acc: &SampleAccount, n: usize) -> Vec<SampleAd> {
    let digits: String = acc.id.chars().filter(char::is_ascii_digit).collect();
    let long = |name: String| {
        let pad = 400usize.saturating_sub(name.chars().count());
        format!("{name}{}", "·".repeat(pad))
    };
    (0..n)
        .map(|i| SampleAd {
            id: format!("9{digits}{i:05}"),
            name: long(format!("{} wide ad {i}", acc.name)),
            adset_id: format!("8{digits}{:03}", i / 100),
            adset_name: long(format!("wide ad set {}", i / 100)),
            campaign_id: format!("7{digits}"),
            campaign_name: long("wide campaign".to_owned()),
            status: "ACTIVE",
            object_type: "PHOTO",
            carousel: false,
        })
        .collect()
}

/// Meta's insights refresh every 15 minutes: a day has 96 refreshes.
pub const REFRESHES_A_DAY: i64 = 96;

/// How many of `date`'s refreshes had come at `now_ms` in the account's
/// timezone: all of a day gone, none of a day to come, and today's so far.
/// Insights "refresh every 15 minutes" (Meta's insights best practices), so
/// today's spend grows through the day as the ads deliver, and a sync that
/// reads today again finds it changed.
pub fn refreshes(timezone: &str, date: NaiveDate, now_ms: i64) -> i64 {
    let local = jiff::tz::db()
        .get(timezone)
        .ok()
        .zip(jiff::Timestamp::from_millisecond(now_ms).ok())
        .map(|(tz, ts)| tz.to_datetime(ts));
    let Some(local) = local else {
        return REFRESHES_A_DAY;
    };
    let today = NaiveDate::from_ymd_opt(
        i32::from(local.year()),
        u32::from(local.month().unsigned_abs()),
        u32::from(local.day().unsigned_abs()),
    );
    match today.map(|t| date.cmp(&t)) {
        Some(std::cmp::Ordering::Less) | None => REFRESHES_A_DAY,
        Some(std::cmp::Ordering::Greater) => 0,
        Some(std::cmp::Ordering::Equal) => {
            (i64::from(local.hour()) * 60 + i64::from(local.minute())) / 15
        }
    }
}

/// What an ad spent on a date, in minor units, with impressions and clicks,
/// once `refreshes` of the day's 96 had come (a day's whole at 96); `None`
/// for an ad-day with nothing yet (Meta leaves it out).
pub fn ad_day(ad_id: &str, date: NaiveDate, refreshes: i64) -> Option<(i64, i64, i64)> {
    let digest = Sha256::digest(format!("{ad_id}:{date}").as_bytes());
    let h = u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"));
    if h % 5 == 0 || refreshes <= 0 {
        return None;
    }
    let so_far = |whole: i64| whole * refreshes.min(REFRESHES_A_DAY) / REFRESHES_A_DAY;
    let spend = 300 + (h >> 8) as i64 % 9_700;
    let impressions = spend * (4 + (h >> 24) as i64 % 8) / 10 + 10;
    let clicks = impressions / (20 + (h >> 32) as i64 % 40);
    Some((so_far(spend), so_far(impressions), so_far(clicks)))
}

/// Minor units as Meta's decimal string, for a currency with cents.
pub fn decimal(cents: i64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-06-30T12:00Z: 09:00 in São Paulo (UTC-3).
    const NOON_UTC: i64 = 1_782_820_800_000;

    #[test]
    fn today_grows_by_the_quarter_hour_and_days_gone_are_whole() {
        let date = |d: &str| NaiveDate::parse_from_str(d, "%Y-%m-%d").unwrap();
        let sp = "America/Sao_Paulo";
        assert_eq!(refreshes(sp, date("2026-06-30"), NOON_UTC), 36);
        assert_eq!(
            refreshes(sp, date("2026-06-30"), NOON_UTC + 14 * 60_000),
            36
        );
        assert_eq!(
            refreshes(sp, date("2026-06-30"), NOON_UTC + 15 * 60_000),
            37
        );
        assert_eq!(refreshes(sp, date("2026-06-29"), NOON_UTC), REFRESHES_A_DAY);
        assert_eq!(refreshes(sp, date("2026-07-01"), NOON_UTC), 0);
        // The same instant is already July 1st east of the date line.
        assert_eq!(
            refreshes("Pacific/Kiritimati", date("2026-07-01"), NOON_UTC),
            8
        );
        // An ad-day with spend: today's share of it, growing, and nothing yet
        // in the day's first quarter hour or on a day to come.
        let ad = (0..100)
            .map(|i| format!("23850{i}"))
            .find(|id| ad_day(id, date("2026-06-30"), REFRESHES_A_DAY).is_some())
            .unwrap();
        let whole = ad_day(&ad, date("2026-06-30"), REFRESHES_A_DAY).unwrap();
        let morning = ad_day(&ad, date("2026-06-30"), 36).unwrap();
        let later = ad_day(&ad, date("2026-06-30"), 40).unwrap();
        assert_eq!(morning.0, whole.0 * 36 / 96);
        assert!(morning.0 < later.0 && later.0 < whole.0);
        assert!(morning.1 <= later.1 && later.1 <= whole.1);
        assert_eq!(ad_day(&ad, date("2026-06-30"), 0), None);
    }
}
