//! A cohort's counters (leads, qualified, won, revenue, counted on the UTC
//! day a lead first arrived) and the derived metrics, computed one way for
//! every reader (seed 001, "Derived metrics"): cost per lead, per qualified lead and per sale, the return on
//! spend and its band. adtrail stores totals and never a ratio; the reports
//! call these on the rows the spend bought (ad, ad set and campaign rows,
//! paid origins, a site's `paid`), never on totals that include organic
//! leads, and not at all under a currency mismatch (the caller passes no
//! spend).

/// What a row counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub leads: i64,
    pub qualified: i64,
    pub won: i64,
    pub revenue_cents: i64,
}

impl Counters {
    /// What one lead adds to its cohort's counters: a lead; qualified at
    /// `qualified` or `won` (a sale counts as qualified too); won, with its
    /// revenue, at `won`.
    pub fn of_lead(stage: crate::leads::Stage, revenue_cents: Option<i64>) -> Self {
        use crate::leads::Stage;
        let won = stage == Stage::Won;
        Self {
            leads: 1,
            qualified: i64::from(matches!(stage, Stage::Qualified | Stage::Won)),
            won: i64::from(won),
            revenue_cents: if won { revenue_cents.unwrap_or(0) } else { 0 },
        }
    }

    /// What a change does to the counters: `after - before` (a new lead has
    /// no `before`, a removed one no `after`).
    pub fn delta(before: Option<Self>, after: Option<Self>) -> Self {
        let (b, a) = (before.unwrap_or_default(), after.unwrap_or_default());
        Self {
            leads: a.leads - b.leads,
            qualified: a.qualified - b.qualified,
            won: a.won - b.won,
            revenue_cents: a.revenue_cents - b.revenue_cents,
        }
    }

    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    pub fn add(&mut self, other: &Self) {
        self.leads += other.leads;
        self.qualified += other.qualified;
        self.won += other.won;
        self.revenue_cents += other.revenue_cents;
    }
}

/// The derived figures of a row: `None` where unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Derived {
    pub cost_per_lead_cents: Option<i64>,
    pub cost_per_qualified_cents: Option<i64>,
    pub cost_per_sale_cents: Option<i64>,
    /// Revenue over spend (9.3 means 9.3x).
    pub return_on_spend: Option<f64>,
}

/// How good a return is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnBand {
    Strong,
    Ok,
    Weak,
}

impl ReturnBand {
    pub fn as_str(self) -> &'static str {
        match self {
            ReturnBand::Strong => "strong",
            ReturnBand::Ok => "ok",
            ReturnBand::Weak => "weak",
        }
    }
}

/// `spend / count` in cents, rounded half-up; `None` for a zero count.
fn cost(spend_cents: i64, count: i64) -> Option<i64> {
    (count > 0).then(|| (2 * spend_cents + count) / (2 * count))
}

/// The derived figures of a row. Null-safe as the seed says: without spend
/// every figure is `None`; a zero count gives a `None` cost; a zero spend a
/// `None` return.
pub fn derive(spend_cents: Option<i64>, c: &Counters) -> Derived {
    let Some(spend) = spend_cents.filter(|s| *s >= 0) else {
        return Derived::default();
    };
    Derived {
        cost_per_lead_cents: cost(spend, c.leads),
        cost_per_qualified_cents: cost(spend, c.qualified),
        cost_per_sale_cents: cost(spend, c.won),
        return_on_spend: (spend > 0).then(|| c.revenue_cents as f64 / spend as f64),
    }
}

/// `strong` from 8x, `ok` from 4x, `weak` below; `None` when unknown.
pub fn return_band(return_on_spend: Option<f64>) -> Option<ReturnBand> {
    return_on_spend.map(|r| {
        if r >= 8.0 {
            ReturnBand::Strong
        } else if r >= 4.0 {
            ReturnBand::Ok
        } else {
            ReturnBand::Weak
        }
    })
}

#[cfg(test)]
mod tests;
