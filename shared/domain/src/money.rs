//! Money: integer minor units of a currency, parsed from Meta's decimal
//! strings without floats.
//!
//! Meta reports `"spend":"100.50"` in the ad account's currency. We store
//! minor units (cents for most currencies, whole units for JPY, thousandths
//! for KWD), rounding half-up where Meta gives more decimals than the currency
//! has.

use std::fmt;

/// An ISO 4217 code, upper-case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency(String);

/// Why a value is not money or not a currency.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    #[error("must be a three-letter upper-case ISO 4217 code")]
    Currency,
    #[error("is not a decimal amount")]
    Malformed,
    #[error("is out of range")]
    Overflow,
}

/// The currencies ISO 4217 lists as in use (its list of 2026), sorted: the
/// funds, precious metals and test codes (`X…` but the regional currencies)
/// are left out, and so is any made-up code (`ZZZ`), which Meta would
/// refuse on every `Purchase`.
pub const ISO_4217: [&str; 166] = [
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BOV", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD",
    "CAD", "CDF", "CHE", "CHF", "CHW", "CLF", "CLP", "CNY", "COP", "COU", "CRC", "CUP", "CVE",
    "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL",
    "GHS", "GIP", "GMD", "GNF", "GTQ", "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR",
    "IQD", "IRR", "ISK", "JMD", "JOD", "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD",
    "KYD", "KZT", "LAK", "LBP", "LKR", "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK",
    "MNT", "MOP", "MRU", "MUR", "MVR", "MWK", "MXN", "MXV", "MYR", "MZN", "NAD", "NGN", "NIO",
    "NOK", "NPR", "NZD", "OMR", "PAB", "PEN", "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON",
    "RSD", "RUB", "RWF", "SAR", "SBD", "SCR", "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD",
    "SSP", "STN", "SVC", "SYP", "SZL", "THB", "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD",
    "TZS", "UAH", "UGX", "USD", "USN", "UYI", "UYU", "UYW", "UZS", "VED", "VES", "VND", "VUV",
    "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW", "ZWG",
];

/// Currencies whose minor unit is not a hundredth (ISO 4217).
const EXPONENTS: &[(&str, u32)] = &[
    ("BIF", 0),
    ("CLP", 0),
    ("DJF", 0),
    ("GNF", 0),
    ("ISK", 0),
    ("JPY", 0),
    ("KMF", 0),
    ("KRW", 0),
    ("PYG", 0),
    ("RWF", 0),
    ("UGX", 0),
    ("UYI", 0),
    ("VND", 0),
    ("VUV", 0),
    ("XAF", 0),
    ("XOF", 0),
    ("XPF", 0),
    ("BHD", 3),
    ("IQD", 3),
    ("JOD", 3),
    ("KWD", 3),
    ("LYD", 3),
    ("OMR", 3),
    ("TND", 3),
];

impl Currency {
    /// # Errors
    /// [`MoneyError::Currency`] unless the value is an ISO 4217 currency in
    /// use ([`ISO_4217`]).
    pub fn parse(value: &str) -> Result<Self, MoneyError> {
        if ISO_4217.binary_search(&value).is_ok() {
            Ok(Self(value.to_owned()))
        } else {
            Err(MoneyError::Currency)
        }
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Decimal places of the currency's minor unit.
    pub fn exponent(&self) -> u32 {
        EXPONENTS
            .iter()
            .find(|(code, _)| *code == self.0)
            .map_or(2, |(_, e)| *e)
    }

    /// Parses a non-negative decimal string (`"100.5"`, `"3"`, `"0.005"`) into
    /// minor units of this currency, rounding half-up.
    ///
    /// # Errors
    /// [`MoneyError::Malformed`] for anything but digits with one optional
    /// point; [`MoneyError::Overflow`] past `i64`.
    pub fn parse_minor(&self, text: &str) -> Result<i64, MoneyError> {
        if text.is_empty() || text.len() > 40 {
            return Err(MoneyError::Malformed);
        }
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        let digits_ok = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty()
            || !digits_ok(whole)
            || !digits_ok(frac)
            || (text.contains('.') && frac.is_empty())
        {
            return Err(MoneyError::Malformed);
        }
        let exp = self.exponent() as usize;
        let mut units: i64 = 0;
        let push = |units: i64, d: u8| {
            units
                .checked_mul(10)
                .and_then(|u| u.checked_add(i64::from(d - b'0')))
                .ok_or(MoneyError::Overflow)
        };
        for d in whole.bytes() {
            units = push(units, d)?;
        }
        let fb = frac.as_bytes();
        for i in 0..exp {
            units = push(units, *fb.get(i).unwrap_or(&b'0'))?;
        }
        if fb.get(exp).is_some_and(|d| *d >= b'5') {
            units = units.checked_add(1).ok_or(MoneyError::Overflow)?;
        }
        Ok(units)
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minor(cur: &str, text: &str) -> Result<i64, MoneyError> {
        Currency::parse(cur).unwrap().parse_minor(text)
    }

    #[test]
    fn decimal_strings_become_minor_units() {
        let cases = [
            ("BRL", "100.50", 10_050),
            ("BRL", "100.5", 10_050),
            ("BRL", "100", 10_000),
            ("BRL", "0.01", 1),
            ("BRL", "0.004", 0),
            ("BRL", "0.005", 1),
            ("BRL", "1.994", 199),
            ("BRL", "1.995", 200),
            ("USD", "12345678.999", 1_234_567_900),
            ("JPY", "1500", 1_500),
            ("JPY", "1500.5", 1_501),
            ("JPY", "1500.49", 1_500),
            ("KWD", "1.2345", 1_235),
            ("KWD", "1.2", 1_200),
        ];
        for (cur, text, want) in cases {
            assert_eq!(minor(cur, text), Ok(want), "{cur} {text}");
        }
    }

    #[test]
    fn anything_but_a_plain_decimal_is_refused() {
        for bad in [
            "", "-1", "1.", ".5", "1,5", "1e3", "NaN", " 1", "1.2.3", "+1",
        ] {
            assert_eq!(minor("BRL", bad), Err(MoneyError::Malformed), "{bad:?}");
        }
        assert_eq!(
            minor("BRL", "99999999999999999999"),
            Err(MoneyError::Overflow)
        );
    }

    #[test]
    fn currencies_are_three_upper_case_letters() {
        assert!(Currency::parse("BRL").is_ok());
        for bad in ["brl", "BR", "BRLX", "B1L"] {
            assert!(Currency::parse(bad).is_err());
        }
    }
}
