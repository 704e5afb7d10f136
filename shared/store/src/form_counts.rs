//! A Lead Ads form's day counters: per form and UTC day (the lead's
//! arrival), how many leads came, where the rules sent them (the entry,
//! each column, each discard reason) and how many the host returned. They
//! move in the same transaction as the lead's record, or its return, so a
//! lead counts once however often Meta delivers it; the forms report reads
//! them instead of the 90-day records.

use adtrail_domain::leadads::{FormCount, FormFigures};
use adtrail_domain::time::utc_day;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem, Update};

use crate::attr::{n, s};
use crate::keys::{PK, SK, day_sk, form_day_pk};
use crate::{Forms, StoreError};

/// Days of one form a report reads at most (a year and a day).
const MAX_DAYS_READ: usize = 367;

/// The attribute a counter is kept in: `leads`, `entry`, `returned`,
/// `c#<column>`, `d#<reason>`.
fn attribute(count: &FormCount) -> String {
    match count {
        FormCount::Lead => "leads".into(),
        FormCount::Entry => "entry".into(),
        FormCount::Returned => "returned".into(),
        FormCount::Column(c) => format!("c#{c}"),
        FormCount::Discarded(r) => format!("d#{r}"),
    }
}

/// The counter an attribute keeps, if it is one.
fn count_of(attribute: &str) -> Option<FormCount> {
    match attribute {
        "leads" => Some(FormCount::Lead),
        "entry" => Some(FormCount::Entry),
        "returned" => Some(FormCount::Returned),
        _ => match attribute.split_once('#')? {
            ("c", column) => Some(FormCount::Column(column.to_owned())),
            ("d", reason) => Some(FormCount::Discarded(reason.to_owned())),
            _ => None,
        },
    }
}

/// The `ADD`s of `counts` to a form's counters of the UTC day of `at`, for
/// a transaction.
pub(crate) fn form_day_update(
    table: &str,
    site: &str,
    form: &str,
    at: i64,
    counts: &[FormCount],
) -> Result<TransactWriteItem, StoreError> {
    let day = utc_day(at);
    let adds: Vec<String> = (0..counts.len()).map(|i| format!("#a{i} :one")).collect();
    let mut update = Update::builder()
        .table_name(table)
        .key(PK, s(form_day_pk(site, form)))
        .key(SK, s(day_sk(day)))
        .update_expression(format!("SET dayStart = :day ADD {}", adds.join(", ")))
        .expression_attribute_values(":day", n(day))
        .expression_attribute_values(":one", n(1));
    for (i, count) in counts.iter().enumerate() {
        update = update.expression_attribute_names(format!("#a{i}"), attribute(count));
    }
    Ok(TransactWriteItem::builder()
        .update(update.build().map_err(StoreError::ddb)?)
        .build())
}

impl Forms<'_> {
    /// A form's counters summed over the UTC days `from_day..=to_day`
    /// (without the board's, which are the cohort rollups').
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn form_day_figures(
        &self,
        site: &str,
        form: &str,
        from_day: i64,
        to_day: i64,
    ) -> Result<FormFigures, StoreError> {
        let query = self.form_days_query(site, form, from_day, to_day);
        let mut figures = FormFigures::default();
        let mut days = 0;
        // A year of days is a few pages at most.
        self.query_pages(query, 10, |items| {
            for item in items {
                days += 1;
                for (name, value) in item {
                    if let (Some(count), AttributeValue::N(v)) = (count_of(name), value) {
                        figures.add(&count, v.parse().unwrap_or(0));
                    }
                }
            }
            Ok(days < MAX_DAYS_READ)
        })
        .await?;
        Ok(figures)
    }

    /// A form's leads by UTC day over `from_day..=to_day`, as
    /// `(day_start, leads)` in day order, the days without a lead left
    /// out: the forms list's 30 days from at most 30 small items, where
    /// reading the leads themselves took up to 5,000 records of kilobytes
    /// a form.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn form_daily_leads(
        &self,
        site: &str,
        form: &str,
        from_day: i64,
        to_day: i64,
    ) -> Result<Vec<(i64, u64)>, StoreError> {
        let query = self.form_days_query(site, form, from_day, to_day);
        let mut days = vec![];
        self.query_pages(query, 10, |items| {
            for item in items {
                let day = item.get("dayStart").and_then(|v| v.as_n().ok());
                let leads = item.get("leads").and_then(|v| v.as_n().ok());
                if let (Some(day), Some(leads)) = (day, leads) {
                    days.push((day.parse().unwrap_or(0), leads.parse().unwrap_or(0)));
                }
            }
            Ok(days.len() < MAX_DAYS_READ)
        })
        .await?;
        Ok(days)
    }

    /// The query of a form's day counters over `from_day..=to_day`.
    fn form_days_query(
        &self,
        site: &str,
        form: &str,
        from_day: i64,
        to_day: i64,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(form_day_pk(site, form)))
            .expression_attribute_values(":from", s(day_sk(from_day)))
            .expression_attribute_values(":to", s(day_sk(to_day)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_has_its_attribute_and_back() {
        for count in [
            FormCount::Lead,
            FormCount::Entry,
            FormCount::Returned,
            FormCount::Column("qualificado".into()),
            FormCount::Discarded("only looking, thanks".into()),
        ] {
            assert_eq!(count_of(&attribute(&count)), Some(count));
        }
        for other in ["pk", "sk", "dayStart", "x#y"] {
            assert_eq!(count_of(other), None, "{other}");
        }
    }
}
