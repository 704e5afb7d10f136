//! Tests of [`super`]: table-driven, one row per rule.

use super::*;

#[test]
fn a_lead_counts_on_its_cohort_as_it_moves() {
    use crate::leads::Stage;
    let open = Counters::of_lead(Stage::Open, None);
    let won = Counters::of_lead(Stage::Won, Some(4_599));
    assert_eq!(
        Counters::delta(None, Some(open)),
        Counters {
            leads: 1,
            ..Default::default()
        }
    );
    assert_eq!(
        Counters::delta(Some(open), Some(won)),
        Counters {
            leads: 0,
            qualified: 1,
            won: 1,
            revenue_cents: 4_599
        }
    );
    let lost = Counters::of_lead(Stage::Lost, Some(4_599));
    assert_eq!(
        Counters::delta(Some(won), Some(lost)),
        Counters {
            leads: 0,
            qualified: -1,
            won: -1,
            revenue_cents: -4_599
        }
    );
    assert_eq!(
        Counters::delta(Some(won), None),
        Counters {
            leads: -1,
            qualified: -1,
            won: -1,
            revenue_cents: -4_599
        }
    );
    assert!(Counters::delta(Some(won), Some(won)).is_zero());
}

#[test]
fn costs_and_returns_are_null_safe() {
    let c = Counters {
        leads: 3,
        qualified: 2,
        won: 1,
        revenue_cents: 93_000,
    };
    let d = derive(Some(10_000), &c);
    assert_eq!(d.cost_per_lead_cents, Some(3_333));
    assert_eq!(d.cost_per_qualified_cents, Some(5_000));
    assert_eq!(d.cost_per_sale_cents, Some(10_000));
    assert_eq!(d.return_on_spend, Some(9.3));
    assert_eq!(return_band(d.return_on_spend), Some(ReturnBand::Strong));
    // Half-up: 5 cents over 2 leads is 3.
    assert_eq!(
        derive(Some(5), &Counters { leads: 2, ..c }).cost_per_lead_cents,
        Some(3)
    );
    // Without spend: everything unknown.
    assert_eq!(derive(None, &c), Derived::default());
    // A zero count: no cost. A zero spend: no return, costs of zero.
    let none = Counters::default();
    assert_eq!(derive(Some(10_000), &none).cost_per_lead_cents, None);
    let free = derive(Some(0), &c);
    assert_eq!(
        (free.return_on_spend, free.cost_per_lead_cents),
        (None, Some(0))
    );
    assert_eq!(return_band(None), None);
    assert_eq!(return_band(Some(4.0)), Some(ReturnBand::Ok));
    assert_eq!(return_band(Some(3.99)), Some(ReturnBand::Weak));
    assert_eq!(
        return_band(Some(8.0)).map(ReturnBand::as_str),
        Some("strong")
    );
}
