//! The layout's planning, without DynamoDB: chunks filled, stale changes
//! refused, rows of one item moved.

use super::*;

fn row(day: i64, ad: &str, spend: i64) -> SpendRow {
    SpendRow {
        day_start: day,
        ad_id: ad.into(),
        figures: SpendFigures {
            spend_cents: spend,
            impressions: spend * 10,
            clicks: spend / 10,
        },
        updated_at: 1_700_000_000_000,
    }
}

fn put(day: i64, ad: &str, spend: i64) -> RowChange {
    RowChange::Put {
        row: row(day, ad, spend),
        old: None,
    }
}

const ACCOUNT_PK: &str = "spend#s#act_1";

#[test]
fn a_chunk_of_the_longest_ids_stays_within_a_kilobyte() {
    let pk = crate::keys::spend_pk(&"s".repeat(128), &format!("act_{}", "1".repeat(32)));
    let fill = entries_fill(&pk);
    assert!(fill > 700, "{fill}");
    let overhead = PK.len() + pk.len() + SK.len() + 18 + 1 + 8 + ADS.len() + 3;
    assert!(overhead + fill + 24 <= 1_024);
}

#[test]
fn a_days_ads_fill_chunks_of_about_a_kilobyte() {
    let changes: Vec<_> = (0..100)
        .map(|i| put(0, &format!("1202{i:013}"), 123_456))
        .collect();
    let units = plan(ACCOUNT_PK, BTreeMap::new(), &changes).unwrap();
    assert!((4..=6).contains(&units.len()), "{} chunks", units.len());
    let total: i64 = units.iter().map(|u| u.delta().spend_cents).sum();
    assert_eq!(total, 100 * 123_456, "every row's delta in one unit");
}

#[test]
fn a_change_to_what_is_no_longer_stored_is_refused_whole() {
    let mut days = BTreeMap::new();
    let mut day = Day::default();
    day.single
        .insert("9".into(), (row(0, "9", 5).figures, 1_700_000_000_000));
    days.insert(0, day);
    let stale = RowChange::Put {
        row: row(0, "9", 6),
        old: Some(row(0, "9", 4).figures),
    };
    assert!(plan(ACCOUNT_PK, days, &[put(0, "1", 1), stale]).is_none());
}

#[test]
fn a_changed_one_ad_row_moves_into_a_chunk_in_the_same_unit() {
    let mut days = BTreeMap::new();
    let mut day = Day::default();
    day.single
        .insert("9".into(), (row(0, "9", 5).figures, 1_700_000_000_000));
    day.single
        .insert("8".into(), (row(0, "8", 3).figures, 1_700_000_000_000));
    days.insert(0, day);
    let changes = [
        RowChange::Put {
            row: row(0, "9", 7),
            old: Some(row(0, "9", 5).figures),
        },
        RowChange::Delete {
            row: row(0, "8", 3),
        },
    ];
    let units = plan(ACCOUNT_PK, days, &changes).unwrap();
    assert_eq!(units.len(), 2);
    assert_eq!(units[0].len(), 2, "the chunk and the old item's delete");
    assert_eq!(units[0].delta().spend_cents, 2);
    assert_eq!(units[1].len(), 1);
    assert_eq!(units[1].delta().spend_cents, -3);
    let place = Place {
        table: "t",
        pk: ACCOUNT_PK.into(),
    };
    let mut units = units.into_iter();
    let items = units.next().unwrap().into_items(&place).unwrap();
    assert!(items[0].put().is_some() && items[1].delete().is_some());
}

#[test]
fn a_numbers_bytes_are_about_one_per_two_digits_and_one() {
    assert_eq!(number_bytes(0), 2);
    assert_eq!(number_bytes(9), 2);
    assert_eq!(number_bytes(-12), 3);
    assert_eq!(number_bytes(1_700_000_000_000), 8);
}

#[test]
fn a_chunks_bytes_follow_its_entries() {
    let mut chunk = Chunk::default();
    let entry = (row(0, "1", 5).figures, 1_700_000_000_000);
    chunk.put("1".into(), entry, entry.0);
    chunk.put("22".into(), entry, entry.0);
    chunk.remove("1", entry.0);
    chunk.put("22".into(), (row(0, "22", 123_456).figures, 1), entry.0);
    let summed: usize = chunk.ads.iter().map(|(ad, e)| entry_bytes(ad, e)).sum();
    assert_eq!(chunk.bytes, summed);
}
