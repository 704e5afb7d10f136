//! A day's spend packed into chunk items, against moto: rows written one
//! item an ad (before the chunks) are read and move into a chunk on their
//! next change, sums stay in step, and two writes computed from one read
//! land once.

use adtrail_domain::spend::{RowChange, SpendRow};
use adtrail_store::attr::{n, s};
use adtrail_store::keys::{day_sk, spend_pk, spend_sk, sum_pk};
use adtrail_store::lease::LeaseCondition;
use adtrail_store::spend::SpendWrite;
use adtrail_tests::*;

use crate::store::{linked, row};

const DAY: i64 = 20_000;

/// Writes `rows` as the one-ad items adtrail wrote before the chunks, with
/// their day's sum.
async fn one_item_an_ad(h: &Harness, rows: &[SpendRow]) {
    let store = h.store();
    for r in rows {
        store
            .ddb
            .put_item()
            .table_name(&store.names.table)
            .item("pk", s(spend_pk("s1", "act_1")))
            .item("sk", s(spend_sk(r.day_start, &r.ad_id)))
            .item("adId", s(&r.ad_id))
            .item("dayStart", n(r.day_start))
            .item("spendCents", n(r.figures.spend_cents))
            .item("impressions", n(r.figures.impressions))
            .item("clicks", n(r.figures.clicks))
            .item("updatedAt", n(r.updated_at))
            .send()
            .await
            .expect("put a one-ad row");
        store
            .ddb
            .update_item()
            .table_name(&store.names.table)
            .key("pk", s(sum_pk("s1", "act_1")))
            .key("sk", s(day_sk(r.day_start)))
            .update_expression("ADD spendCents :s, impressions :i, clicks :c")
            .expression_attribute_values(":s", n(r.figures.spend_cents))
            .expression_attribute_values(":i", n(r.figures.impressions))
            .expression_attribute_values(":c", n(r.figures.clicks))
            .send()
            .await
            .expect("add to the sum");
    }
}

/// The sort keys of the account's spend items.
async fn spend_keys(h: &Harness) -> Vec<String> {
    let store = h.store();
    let out = store
        .ddb
        .query()
        .table_name(&store.names.table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", s(spend_pk("s1", "act_1")))
        .send()
        .await
        .expect("query");
    out.items()
        .iter()
        .filter_map(|i| i.get("sk")?.as_s().ok().cloned())
        .collect()
}

fn figures(h: &[SpendRow], ad: &str) -> Option<i64> {
    h.iter()
        .find(|r| r.ad_id == ad)
        .map(|r| r.figures.spend_cents)
}

/// The lease of a run on the linked account `act_1` of site `s1`.
async fn held(h: &Harness) -> LeaseCondition {
    LeaseCondition::Run {
        site_id: "s1".into(),
        ad_account_id: "act_1".into(),
        run_id: linked(h).await,
    }
}

#[tokio::test]
async fn a_days_rows_are_packed_and_one_item_rows_move_on_their_next_change() {
    let h = Harness::start().await;
    let held = held(&h).await;
    let old: Vec<SpendRow> = ["1", "2", "3"].map(|ad| row(DAY, ad, 100)).into();
    one_item_an_ad(&h, &old).await;
    assert_eq!(h.all_rows("s1", "act_1").await, old, "read as they are");
    h.assert_sums_match_rows("s1", "act_1").await;

    let mut changes = vec![
        RowChange::Put {
            row: row(DAY, "1", 150),
            old: Some(old[0].figures),
        },
        RowChange::Delete {
            row: old[1].clone(),
        },
        RowChange::Put {
            row: row(DAY, "4", 50),
            old: None,
        },
    ];
    // Sixty ads of 17 digits on the next day: more than a kilobyte.
    changes.extend((0..60).map(|i| RowChange::Put {
        row: row(DAY + 1, &format!("1202{i:013}"), 12_345),
        old: None,
    }));
    let spend = h.store().spend();
    assert_eq!(
        spend.write_spend(&held, &changes).await.unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let rows = h.all_rows("s1", "act_1").await;
    assert_eq!(rows.len(), 63);
    assert_eq!(figures(&rows, "1"), Some(150));
    assert_eq!(figures(&rows, "2"), None);
    assert_eq!(figures(&rows, "3"), Some(100));
    let keys = spend_keys(&h).await;
    let single: Vec<_> = keys.iter().filter(|k| k.contains('#')).collect();
    assert_eq!(
        single,
        [&spend_sk(DAY * 86_400_000, "3")],
        "only the unchanged row keeps its own item"
    );
    let next_day = day_sk((DAY + 1) * 86_400_000);
    let chunks = keys.iter().filter(|k| k.starts_with(&next_day)).count();
    assert!((2..=4).contains(&chunks), "{chunks} chunks for 60 ads");
    assert_eq!(keys.len(), 1 + 1 + chunks);

    // The same changes again, computed from what is no longer stored:
    // refused whole, nothing moved.
    assert_eq!(
        spend.write_spend(&held, &changes).await.unwrap(),
        SpendWrite::Stale
    );
    assert_eq!(h.all_rows("s1", "act_1").await, rows);
    h.assert_sums_match_rows("s1", "act_1").await;

    // Two executions of one run write the same change at once, each from
    // the same read: it lands once.
    let twice = [RowChange::Put {
        row: row(DAY + 1, "12020000000000007", 99_999),
        old: Some(row(DAY + 1, "1202", 12_345).figures),
    }];
    let (a, b) = tokio::join!(
        spend.write_spend(&held, &twice),
        spend.write_spend(&held, &twice)
    );
    let mut ends = [a.unwrap(), b.unwrap()];
    ends.sort_by_key(|e| *e == SpendWrite::Written);
    assert_eq!(ends, [SpendWrite::Stale, SpendWrite::Written]);
    h.assert_sums_match_rows("s1", "act_1").await;
    let rows = h.all_rows("s1", "act_1").await;
    assert_eq!(figures(&rows, "12020000000000007"), Some(99_999));

    // Deleting every row of a day deletes its chunks.
    let gone: Vec<_> = rows
        .into_iter()
        .filter(|r| r.day_start == (DAY + 1) * 86_400_000)
        .map(|row| RowChange::Delete { row })
        .collect();
    assert_eq!(
        spend.write_spend(&held, &gone).await.unwrap(),
        SpendWrite::Written
    );
    assert_eq!(spend_keys(&h).await.len(), 2);
    h.assert_sums_match_rows("s1", "act_1").await;
}

#[tokio::test]
async fn a_day_of_thousands_of_ads_spans_transactions_with_its_sum_in_step() {
    let h = Harness::start().await;
    let held = held(&h).await;
    // 300 rows of one ad each, as before the chunks: they move as they
    // change, up to twenty deletes beside each chunk put.
    let old: Vec<SpendRow> = (0..300)
        .map(|i| row(DAY, &format!("2{i:016}"), 10))
        .collect();
    one_item_an_ad(&h, &old).await;
    let mut changes: Vec<RowChange> = old
        .iter()
        .map(|r| RowChange::Put {
            row: row(DAY, &r.ad_id, 11),
            old: Some(r.figures),
        })
        .collect();
    // And 2,700 new ads the same day: about 150 chunks in all, more than
    // one transaction holds.
    changes.extend((0..2_700).map(|i| RowChange::Put {
        row: row(DAY, &format!("1{i:016}"), 7),
        old: None,
    }));
    assert_eq!(
        h.store()
            .spend()
            .write_spend(&held, &changes)
            .await
            .unwrap(),
        SpendWrite::Written
    );
    h.assert_sums_match_rows("s1", "act_1").await;
    let rows = h.all_rows("s1", "act_1").await;
    assert_eq!(rows.len(), 3_000);
    assert_eq!(
        rows.iter().map(|r| r.figures.spend_cents).sum::<i64>(),
        300 * 11 + 2_700 * 7
    );
    let keys = spend_keys(&h).await;
    assert!(keys.iter().all(|k| k.contains('!')), "every row moved");
    assert!(keys.len() > 100, "{} chunks", keys.len());
}
