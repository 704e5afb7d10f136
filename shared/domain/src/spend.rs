//! Spend per ad and account-local day: the figures, how a sync run's fresh
//! rows change the stored ones ([`spend_changes`]), and the one rule for
//! what a spend answer may say about money (Conventions: "null versus
//! zero"), used by `/spend`, the daily report and the leads report alike.
//! That rule is decided by account state, never by the absence of rows:
//! spend is known once a synced account covers it, and it never sums
//! across currencies.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// What an ad (or an account, or a site) spent and earned on a day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendFigures {
    pub spend_cents: i64,
    pub impressions: i64,
    pub clicks: i64,
}

impl SpendFigures {
    pub fn add(&mut self, other: SpendFigures) {
        self.spend_cents += other.spend_cents;
        self.impressions += other.impressions;
        self.clicks += other.clicks;
    }
    pub fn minus(self, other: SpendFigures) -> SpendFigures {
        SpendFigures {
            spend_cents: self.spend_cents - other.spend_cents,
            impressions: self.impressions - other.impressions,
            clicks: self.clicks - other.clicks,
        }
    }
    pub fn is_zero(&self) -> bool {
        *self == SpendFigures::default()
    }
}

/// One stored spend row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendRow {
    pub day_start: i64,
    pub ad_id: String,
    pub figures: SpendFigures,
    /// The start of the run that last wrote it.
    pub updated_at: i64,
}

/// A change to one row: its new figures, or its removal.
#[derive(Debug, Clone)]
pub enum RowChange {
    Put {
        row: SpendRow,
        old: Option<SpendFigures>,
    },
    Delete {
        row: SpendRow,
    },
}

impl RowChange {
    pub fn day(&self) -> i64 {
        match self {
            Self::Put { row, .. } | Self::Delete { row } => row.day_start,
        }
    }
    /// What the change does to its day's sum.
    pub fn delta(&self) -> SpendFigures {
        match self {
            Self::Put { row, old } => row.figures.minus(old.unwrap_or_default()),
            Self::Delete { row } => SpendFigures::default().minus(row.figures),
        }
    }
}

/// How a range's fresh rows change the stored ones: a put for each ad-day
/// whose figures differ (Meta may list an ad-day twice: the last wins),
/// none for one that did not change, and, when the range was read whole
/// (`complete`), a delete for each stored row Meta no longer lists (a day
/// corrected to zero). Nothing is inferred from a range read in part.
pub fn spend_changes(
    stored: Vec<SpendRow>,
    fresh: impl IntoIterator<Item = (i64, String, SpendFigures)>,
    complete: bool,
    now: i64,
) -> Vec<RowChange> {
    let mut stored: HashMap<(i64, String), SpendRow> = stored
        .into_iter()
        .map(|r| ((r.day_start, r.ad_id.clone()), r))
        .collect();
    let fresh: BTreeMap<(i64, String), SpendFigures> = fresh
        .into_iter()
        .map(|(day, ad, figures)| ((day, ad), figures))
        .collect();
    let mut changes = vec![];
    for ((day, ad), figures) in fresh {
        let old = stored.remove(&(day, ad.clone()));
        if old.as_ref().is_some_and(|o| o.figures == figures) {
            continue;
        }
        changes.push(RowChange::Put {
            row: SpendRow {
                day_start: day,
                ad_id: ad,
                figures,
                updated_at: now,
            },
            old: old.map(|o| o.figures),
        });
    }
    if complete {
        let mut gone: Vec<SpendRow> = stored.into_values().collect();
        gone.sort_by(|a, b| (a.day_start, &a.ad_id).cmp(&(b.day_start, &b.ad_id)));
        changes.extend(gone.into_iter().map(|row| RowChange::Delete { row }));
    }
    changes
}

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

    fn figures(spend: i64) -> SpendFigures {
        SpendFigures {
            spend_cents: spend,
            impressions: spend * 10,
            clicks: spend % 7,
        }
    }

    proptest::proptest! {
        /// Applying a run's changes to the stored rows leaves exactly
        /// Meta's rows when the range was read whole, and drops nothing when
        /// it was read in part; the day sums move by the changes' deltas.
        #[test]
        fn changes_turn_the_stored_rows_into_metas(
            stored in proptest::collection::btree_map((0i64..5, 0u8..6), 0i64..50, 0..20),
            fresh in proptest::collection::vec(((0i64..5, 0u8..6), 0i64..50), 0..30),
            complete in proptest::bool::ANY,
        ) {
            let row = |(day, ad): (i64, u8), spend| SpendRow {
                day_start: day,
                ad_id: ad.to_string(),
                figures: figures(spend),
                updated_at: 0,
            };
            let rows: Vec<SpendRow> = stored.iter().map(|(k, v)| row(*k, *v)).collect();
            let changes = spend_changes(
                rows.clone(),
                fresh.iter().map(|((d, a), v)| (*d, a.to_string(), figures(*v))),
                complete,
                9,
            );
            let mut after: BTreeMap<(i64, String), SpendFigures> =
                rows.iter().map(|r| ((r.day_start, r.ad_id.clone()), r.figures)).collect();
            let mut sums: BTreeMap<i64, SpendFigures> = BTreeMap::new();
            for r in &rows {
                sums.entry(r.day_start).or_default().add(r.figures);
            }
            for c in &changes {
                sums.entry(c.day()).or_default().add(c.delta());
                match c {
                    RowChange::Put { row, old } => {
                        proptest::prop_assert_eq!(after.get(&(row.day_start, row.ad_id.clone())).copied(), *old);
                        proptest::prop_assert_ne!(Some(row.figures), *old, "an unchanged row is not written");
                        after.insert((row.day_start, row.ad_id.clone()), row.figures);
                    }
                    RowChange::Delete { row } => {
                        proptest::prop_assert!(complete, "a part read in part deletes nothing");
                        after.remove(&(row.day_start, row.ad_id.clone()));
                    }
                }
            }
            let mut want: BTreeMap<(i64, String), SpendFigures> = BTreeMap::new();
            if !complete {
                want.extend(rows.iter().map(|r| ((r.day_start, r.ad_id.clone()), r.figures)));
            }
            for ((d, a), v) in &fresh {
                want.insert((*d, a.to_string()), figures(*v));
            }
            proptest::prop_assert_eq!(&after, &want);
            let mut recount: BTreeMap<i64, SpendFigures> = BTreeMap::new();
            for ((d, _), f) in &after {
                recount.entry(*d).or_default().add(*f);
            }
            sums.retain(|_, f| !f.is_zero());
            recount.retain(|_, f| !f.is_zero());
            proptest::prop_assert_eq!(sums, recount);
        }
    }
}
