//! The layout against a model: rounds of random changes to an account's
//! days (new ads, changed and removed ones, rows still in their one-ad
//! items) planned, their items applied to an in-memory table that checks
//! each write's condition as DynamoDB would, and read back the way the
//! store reads them. What must hold after every round:
//!
//! - each ad's figures are those the changes left, in one item only;
//! - every chunk is within a kilobyte as DynamoDB sizes it (computed here
//!   from the item written, not from the planner's own count);
//! - the units' deltas add up to the changes' per day, as the sums move;
//! - every write's condition holds on what it replaces, and a second
//!   execution of the same changes from the same read is refused.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use proptest::prelude::*;

use super::*;

const ACCOUNT_PK: &str = "spend#loja-x#act_1234567890";
const DAYS: [i64; 3] = [0, 86_400_000, 172_800_000];

/// DynamoDB's size of a value: a string's UTF-8 bytes, a number's one
/// byte per two significant digits and one, a list's or map's three bytes
/// and one an element (a map's names counted).
fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) => s.len(),
        AttributeValue::N(n) => {
            let digits = n.trim_start_matches('-').trim_start_matches('0');
            let digits = digits.trim_end_matches('0').len().max(1);
            digits.div_ceil(2) + 1
        }
        AttributeValue::L(l) => 3 + l.iter().map(|e| 1 + value_size(e)).sum::<usize>(),
        AttributeValue::M(m) => {
            3 + m
                .iter()
                .map(|(k, e)| 1 + k.len() + value_size(e))
                .sum::<usize>()
        }
        _ => 1,
    }
}

fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

/// The table: one account's items by sort key.
type Table = BTreeMap<String, Item>;

/// A one-ad item as written before the chunks.
fn legacy(day: i64, ad: &str, f: SpendFigures) -> Item {
    [
        (PK.to_owned(), s(ACCOUNT_PK)),
        (SK.to_owned(), s(spend_sk(day, ad))),
        ("spendCents".to_owned(), n(f.spend_cents)),
        ("impressions".to_owned(), n(f.impressions)),
        ("clicks".to_owned(), n(f.clicks)),
        ("updatedAt".to_owned(), n(1)),
    ]
    .into()
}

/// Whether `condition` (with `values`) holds on `stored`: the planner's
/// three forms.
fn holds(condition: &str, values: &Item, stored: Option<&Item>) -> bool {
    match condition {
        "attribute_not_exists(pk)" => stored.is_none(),
        "v = :v" => stored.and_then(|i| i.get("v")) == values.get(":v"),
        _ => {
            let Some(i) = stored else { return false };
            [
                ("spendCents", ":oldSpend"),
                ("impressions", ":oldImpressions"),
                ("clicks", ":oldClicks"),
            ]
            .iter()
            .all(|(a, v)| i.get(*a) == values.get(*v))
        }
    }
}

/// Whether every condition of a transaction's items holds.
fn all_hold(table: &Table, items: &[TransactWriteItem]) -> bool {
    items.iter().all(|t| {
        let (sk, condition, values) = if let Some(p) = t.put() {
            (
                p.item()[SK].as_s().unwrap(),
                p.condition_expression(),
                p.expression_attribute_values(),
            )
        } else {
            let d = t.delete().expect("a put or a delete");
            (
                d.key()[SK].as_s().unwrap(),
                d.condition_expression(),
                d.expression_attribute_values(),
            )
        };
        let condition = condition.expect("every write is conditional");
        holds(condition, values.unwrap_or(&Item::new()), table.get(sk))
    })
}

/// Applies one transaction's items, every condition checked first.
fn apply(table: &mut Table, items: Vec<TransactWriteItem>) {
    assert!(all_hold(table, &items), "a condition fails");
    for t in items {
        if let Some(p) = t.put() {
            let item = p.item().clone();
            assert!(item_size(&item) <= 1_024, "{} bytes", item_size(&item));
            table.insert(item[SK].as_s().unwrap().clone(), item);
        } else {
            let d = t.delete().unwrap();
            table.remove(d.key()[SK].as_s().unwrap());
        }
    }
}

/// The days as the store reads them, and each ad's figures by day.
fn read(table: &Table) -> (BTreeMap<i64, Day>, BTreeMap<(i64, String), SpendFigures>) {
    let mut days = BTreeMap::new();
    let mut rows = BTreeMap::new();
    for item in table.values() {
        read_item(&mut days, item).unwrap();
        for r in rows_of(item).unwrap() {
            let again = rows.insert((r.day_start, r.ad_id.clone()), r.figures);
            assert!(again.is_none(), "{} stored twice", r.ad_id);
        }
    }
    (days, rows)
}

/// A round's wishes: an ad (of a pool of 80) on a day set to a spend, or
/// removed (`None`).
type Round = Vec<(usize, usize, Option<i64>)>;

fn round() -> impl Strategy<Value = Round> {
    prop::collection::vec(
        (
            0..DAYS.len(),
            0..80usize,
            prop::option::weighted(0.85, 0..5_000_000i64),
        ),
        0..120,
    )
}

fn figures(spend: i64) -> SpendFigures {
    SpendFigures {
        spend_cents: spend,
        impressions: spend * 7 + 1_000_000,
        clicks: spend / 3,
    }
}

/// The changes a round makes to what is stored, as the domain computes
/// them (a put knows the figures it replaces).
fn changes_of(
    round: &Round,
    stored: &BTreeMap<(i64, String), SpendFigures>,
) -> (Vec<RowChange>, BTreeMap<(i64, String), SpendFigures>) {
    let mut wanted = stored.clone();
    for (d, ad, spend) in round {
        let key = (DAYS[*d], format!("1202{ad:014}"));
        match spend {
            Some(s) => wanted.insert(key, figures(*s)),
            None => wanted.remove(&key),
        };
    }
    let row = |(day, ad): &(i64, String), f: SpendFigures| SpendRow {
        day_start: *day,
        ad_id: ad.clone(),
        figures: f,
        updated_at: 1_700_000_000_000,
    };
    let mut changes = vec![];
    for (key, f) in &wanted {
        let old = stored.get(key).copied();
        if old != Some(*f) {
            changes.push(RowChange::Put {
                row: row(key, *f),
                old,
            });
        }
    }
    for (key, f) in stored {
        if !wanted.contains_key(key) {
            changes.push(RowChange::Delete { row: row(key, *f) });
        }
    }
    (changes, wanted)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rounds_of_changes_land_exactly_in_chunks_of_a_kilobyte(
        old in prop::collection::vec((0..DAYS.len(), 0..80usize, 0..5_000_000i64), 0..40),
        rounds in prop::collection::vec(round(), 1..5),
    ) {
        let mut table = Table::new();
        for (d, ad, spend) in &old {
            let item = legacy(DAYS[*d], &format!("1202{ad:014}"), figures(*spend));
            table.insert(item[SK].as_s().unwrap().clone(), item);
        }
        let place = Place { table: "t", pk: ACCOUNT_PK.into() };
        for round in &rounds {
            let (days, stored) = read(&table);
            let (changes, wanted) = changes_of(round, &stored);
            // The same run executed twice from one read (a duplicate
            // delivery): whichever lands second is refused, unit by unit.
            let (rival_days, _) = read(&table);
            let rival = plan(ACCOUNT_PK, rival_days, &changes).expect("the same read");
            let units = plan(ACCOUNT_PK, days, &changes).expect("computed from what is stored");
            let mut moved: BTreeMap<i64, i64> = BTreeMap::new();
            for unit in units {
                prop_assert!(unit.len() <= 100);
                *moved.entry(unit.day()).or_default() += unit.delta().spend_cents;
                apply(&mut table, unit.into_items(&place).unwrap());
            }
            let mut expected: BTreeMap<i64, i64> = BTreeMap::new();
            for c in &changes {
                *expected.entry(c.day()).or_default() += c.delta().spend_cents;
            }
            expected.retain(|_, d| *d != 0);
            moved.retain(|_, d| *d != 0);
            prop_assert_eq!(moved, expected);
            let (_, now) = read(&table);
            prop_assert_eq!(now, wanted);
            for unit in rival {
                prop_assert!(!all_hold(&table, &unit.into_items(&place).unwrap()));
            }
        }
    }
}
