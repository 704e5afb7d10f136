//! The one rule for what a spend answer may say about money (Conventions:
//! "null versus zero"), used by `/spend`, the daily report and the leads
//! report alike. It is decided by account state, never by the absence of
//! rows: spend is known once a synced account covers it, and it never sums
//! across currencies.

use std::collections::BTreeSet;

/// What an answer covering some sites may say of their spend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendBasis {
    /// At least one synced account covers the answer: figures are `0`
    /// when it spent nothing, not `null`.
    pub known: bool,
    /// The synced accounts bill in two currencies, or one of them in a
    /// currency other than its site's: money is `null`, never summed.
    pub currency_mismatch: bool,
    /// The one currency the synced accounts bill in, if there is one.
    pub spend_currency: Option<String>,
}

impl SpendBasis {
    /// Money as the answer gives it: `None` (`null`) unless known and in
    /// one currency.
    pub fn money(&self, cents: i64) -> Option<i64> {
        (self.known && !self.currency_mismatch).then_some(cents)
    }

    /// A count (impressions, clicks) as the answer gives it: not money, so
    /// a currency mismatch leaves it; `None` until known.
    pub fn count(&self, n: i64) -> Option<i64> {
        self.known.then_some(n)
    }
}

/// The basis of an answer over `sites`: each site's own currency with the
/// currencies of its synced accounts.
pub fn spend_basis<'a, S, A>(sites: S) -> SpendBasis
where
    S: IntoIterator<Item = (&'a str, A)>,
    A: IntoIterator<Item = &'a str>,
{
    let mut all: BTreeSet<&str> = BTreeSet::new();
    let mut foreign = false;
    for (site_currency, accounts) in sites {
        for currency in accounts {
            foreign |= currency != site_currency;
            all.insert(currency);
        }
    }
    SpendBasis {
        known: !all.is_empty(),
        currency_mismatch: foreign || all.len() > 1,
        spend_currency: (all.len() == 1)
            .then(|| all.first().map(|c| (*c).to_owned()))
            .flatten(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basis(sites: &[(&'static str, &[&'static str])]) -> SpendBasis {
        spend_basis(sites.iter().map(|(c, a)| (*c, a.iter().copied())))
    }

    #[test]
    fn null_zero_and_mismatch_follow_the_accounts() {
        // (sites, known, mismatch, spendCurrency)
        type Sites<'a> = &'a [(&'a str, &'a [&'a str])];
        let rows: [(Sites, bool, bool, Option<&str>); 7] = [
            (&[("BRL", &[])], false, false, None),
            (&[], false, false, None),
            (&[("BRL", &["BRL", "BRL"])], true, false, Some("BRL")),
            (&[("BRL", &["USD"])], true, true, Some("USD")),
            (&[("BRL", &["BRL", "USD"])], true, true, None),
            (&[("BRL", &["BRL"]), ("USD", &["USD"])], true, true, None),
            // A site with no synced account adds no money and no mismatch.
            (&[("BRL", &["BRL"]), ("USD", &[])], true, false, Some("BRL")),
        ];
        for (sites, known, mismatch, currency) in rows {
            let b = basis(sites);
            assert_eq!(
                (b.known, b.currency_mismatch, b.spend_currency.as_deref()),
                (known, mismatch, currency),
                "{sites:?}"
            );
        }
        let ok = basis(&[("BRL", &["BRL"])]);
        assert_eq!((ok.money(0), ok.count(7)), (Some(0), Some(7)));
        let mixed = basis(&[("BRL", &["USD"])]);
        assert_eq!((mixed.money(10), mixed.count(7)), (None, Some(7)));
        let none = basis(&[("BRL", &[])]);
        assert_eq!((none.money(0), none.count(0)), (None, None));
    }
}
