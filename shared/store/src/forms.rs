//! A site's Lead Ads forms (as Meta lists them, replaced at each read of a
//! linked Page's forms), the host's rules for each, and each form lead's
//! choices and decision (written once per lead, kept 90 days), read by
//! form and time for the rules' counts, simulations and the form-lead
//! list.

use std::collections::BTreeMap;

use adtrail_domain::leadads::{FORM_LEAD_KEPT_MS, FormCount, FormLeadRecord, FormRules, LeadForm};

use crate::attr::{n, s};
use crate::items::{FormItem, FormLeadItem, FormLeadRefItem, RulesItem, decode, encode};
use crate::keys::{
    FORM_SK_PREFIX, PK, SK, form_lead_ref_pk, form_lead_sk, form_leads_pk, form_sk, rules_sk,
    site_forms_pk,
};
use crate::{Forms, StoreError};
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use crate::form_counts::form_day_update;

/// A site's forms and the rules set on them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteForms {
    pub forms: Vec<LeadForm>,
    /// By form: the rules and when they were set.
    pub rules: BTreeMap<String, (FormRules, i64)>,
}

impl Forms<'_> {
    /// The site's forms and rules, in one query read to its end: a Page
    /// lists up to 500 forms, each with up to 64 KB of questions, and a
    /// form left unread would be listed nowhere and never removed.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_forms(&self, site: &str) -> Result<SiteForms, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(site_forms_pk(site)))
            .consistent_read(true);
        let mut found = SiteForms::default();
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                let sk = item.get(SK).and_then(|v| v.as_s().ok()).map_or("", |v| v);
                if let Some(form) = sk.strip_prefix("rules#") {
                    let r = decode::<RulesItem>(item, "form rules")?;
                    let at = r.updated_at;
                    found.rules.insert(form.to_owned(), (r.rules(), at));
                } else if sk.starts_with(FORM_SK_PREFIX) {
                    found.forms.push(decode::<FormItem>(item, "form")?.into());
                }
            }
            Ok(true)
        })
        .await?;
        Ok(found)
    }

    /// One form of the site, with its rules if set.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn form(
        &self,
        site: &str,
        form: &str,
    ) -> Result<Option<(LeadForm, Option<(FormRules, i64)>)>, StoreError> {
        let Some(item) = self.read_item(site_forms_pk(site), &form_sk(form)).await? else {
            return Ok(None);
        };
        let found: LeadForm = decode::<FormItem>(&item, "form")?.into();
        let rules = self
            .read_item(site_forms_pk(site), &rules_sk(form))
            .await?
            .map(|i| decode::<RulesItem>(&i, "form rules"))
            .transpose()?
            .map(|r| {
                let at = r.updated_at;
                (r.rules(), at)
            });
        Ok(Some((found, rules)))
    }

    /// Stores `listed` as the forms `page` has on `site`: each written
    /// whole, the page's forms no longer listed removed (their rules stay,
    /// for a form that comes back).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn replace_page_forms(
        &self,
        site: &str,
        page: &str,
        listed: &[LeadForm],
    ) -> Result<(), StoreError> {
        let before = self.site_forms(site).await?.forms;
        let pk = site_forms_pk(site);
        let puts = listed
            .iter()
            .map(|f| encode(&FormItem::of(f, pk.clone(), form_sk(&f.form_id)), "form"))
            .collect::<Result<_, _>>()?;
        let gone = before
            .iter()
            .filter(|b| b.page_id == page && !listed.iter().any(|f| f.form_id == b.form_id))
            .map(|b| (pk.clone(), form_sk(&b.form_id)))
            .collect();
        self.put_and_delete(puts, gone).await
    }

    /// Sets a form's rules.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn put_rules(
        &self,
        site: &str,
        form: &str,
        rules: &FormRules,
        now: i64,
    ) -> Result<(), StoreError> {
        let item = encode(
            &RulesItem::of(rules, site_forms_pk(site), rules_sk(form), now),
            "form rules",
        )?;
        self.ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(())
    }

    /// Keeps a form lead's choices and decision, once, with the
    /// reference that finds it by id: answers `None` when written now, or
    /// the record an earlier delivery wrote (its decision stands, whatever
    /// the rules say now).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn record_form_lead(
        &self,
        r: &FormLeadRecord,
    ) -> Result<Option<FormLeadRecord>, StoreError> {
        let ttl = (r.created_at + FORM_LEAD_KEPT_MS).div_euclid(1_000);
        let record = FormLeadItem::of(
            r,
            form_leads_pk(&r.site_id, &r.form_id),
            form_lead_sk(r.created_at, &r.leadgen_id),
            ttl,
        );
        let reference = FormLeadRefItem {
            pk: form_lead_ref_pk(&r.site_id),
            sk: r.leadgen_id.clone(),
            form_id: r.form_id.clone(),
            created_at: r.created_at,
            ttl,
        };
        let put = |item| -> Result<TransactWriteItem, StoreError> {
            Ok(TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&self.names.table)
                        .set_item(Some(item))
                        .condition_expression("attribute_not_exists(pk)")
                        .build()
                        .map_err(StoreError::ddb)?,
                )
                .build())
        };
        // Counted once, with the record: a second delivery's puts fail
        // and take the counters' update with them.
        let items = vec![
            put(encode(&record, "form lead")?)?,
            put(encode(&reference, "form lead reference")?)?,
            form_day_update(
                &self.names.table,
                &r.site_id,
                &r.form_id,
                r.created_at,
                &FormCount::of_decision(&r.decision),
            )?,
        ];
        if self.transact(items).await?.is_none() {
            return Ok(None);
        }
        self.form_lead_by_id(&r.site_id, &r.leadgen_id)
            .await?
            .ok_or(StoreError::Condition("the form lead vanished"))
            .map(Some)
    }

    /// A form lead's record, by its id.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn form_lead_by_id(
        &self,
        site: &str,
        leadgen_id: &str,
    ) -> Result<Option<FormLeadRecord>, StoreError> {
        let Some(reference) = self.read_item(form_lead_ref_pk(site), leadgen_id).await? else {
            return Ok(None);
        };
        let at = decode::<FormLeadRefItem>(&reference, "form lead reference")?;
        self.read_item(
            form_leads_pk(site, &at.form_id),
            &form_lead_sk(at.created_at, leadgen_id),
        )
        .await?
        .map(|i| decode::<FormLeadItem>(&i, "form lead").map(FormLeadRecord::from))
        .transpose()
    }

    /// Marks a form lead returned (a bad lead) with its reason, once:
    /// answers `false` when it already was.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn return_form_lead(
        &self,
        r: &FormLeadRecord,
        reason: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        let mark = Update::builder()
            .table_name(&self.names.table)
            .key(PK, s(form_leads_pk(&r.site_id, &r.form_id)))
            .key(SK, s(form_lead_sk(r.created_at, &r.leadgen_id)))
            .update_expression("SET returnedAt = :at, returnedReason = :reason")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(returnedAt)")
            .expression_attribute_values(":at", n(at))
            .expression_attribute_values(":reason", s(reason))
            .build()
            .map_err(StoreError::ddb)?;
        // Counted once, with the mark.
        let items = vec![
            TransactWriteItem::builder().update(mark).build(),
            form_day_update(
                &self.names.table,
                &r.site_id,
                &r.form_id,
                r.created_at,
                &[FormCount::Returned],
            )?,
        ];
        Ok(self.transact(items).await?.is_none())
    }

    /// The site's form leads after `after` (`<createdAt, 13 digits>#<id>`,
    /// the list's cursor), oldest first across its forms, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn site_form_leads(
        &self,
        site: &str,
        forms: &[String],
        after: &str,
        limit: usize,
    ) -> Result<Vec<FormLeadRecord>, StoreError> {
        let mut found = vec![];
        for form in forms {
            let query = self
                .ddb
                .query()
                .table_name(&self.names.table)
                .key_condition_expression("pk = :pk AND sk > :after")
                .expression_attribute_values(":pk", s(form_leads_pk(site, form)))
                .expression_attribute_values(":after", s(after))
                .limit(i32::try_from(limit).unwrap_or(500));
            // Each form's `limit` next leads, over as many pages as DynamoDB
            // cuts them into: a form read short would let the merge below
            // pass over its leads, and the cursor past them for good.
            let mut n_read = 0;
            self.query_pages(query, usize::MAX, |items| {
                for item in items {
                    n_read += 1;
                    found.push(decode::<FormLeadItem>(item, "form lead")?.into());
                }
                Ok(n_read < limit)
            })
            .await?;
        }
        found.sort_by(|a: &FormLeadRecord, b| {
            (a.created_at, &a.leadgen_id).cmp(&(b.created_at, &b.leadgen_id))
        });
        found.truncate(limit);
        Ok(found)
    }

    /// A form's leads created in `[from, to)`, oldest first, at most
    /// `cap`; the flag says the window held more.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn form_leads(
        &self,
        site: &str,
        form: &str,
        from: i64,
        to: i64,
        cap: usize,
    ) -> Result<(Vec<FormLeadRecord>, bool), StoreError> {
        let query = self
            .form_leads_query(site, form, from, to)
            .limit(i32::try_from(cap.min(1_000) + 1).unwrap_or(1_000));
        let mut found = vec![];
        let mut partial = false;
        // Until `cap` and one more, however many pages that takes: pages
        // of long forms' leads end at 1 MB before 1,001 leads.
        self.query_pages(query, usize::MAX, |items| {
            for item in items {
                if found.len() == cap {
                    partial = true;
                    return Ok(false);
                }
                found.push(decode::<FormLeadItem>(item, "form lead")?.into());
            }
            Ok(true)
        })
        .await?;
        Ok((found, partial))
    }

    /// The query of a form's leads made in `from..to`, oldest first.
    fn form_leads_query(
        &self,
        site: &str,
        form: &str,
        from: i64,
        to: i64,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(form_leads_pk(site, form)))
            .expression_attribute_values(":from", s(form_lead_sk(from.max(0), "")))
            .expression_attribute_values(":to", s(form_lead_sk(to.max(0), "")))
    }

    /// When the newest of a form's leads made in `from..to` was made, if
    /// any: one record read, newest first.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails or the record is unreadable.
    pub async fn latest_form_lead_at(
        &self,
        site: &str,
        form: &str,
        from: i64,
        to: i64,
    ) -> Result<Option<i64>, StoreError> {
        let query = self
            .form_leads_query(site, form, from, to)
            .scan_index_forward(false)
            .limit(1);
        let mut latest = None;
        self.query_pages(query, 1, |items| {
            if let Some(item) = items.first() {
                let record: FormLeadRecord = decode::<FormLeadItem>(item, "form lead")?.into();
                latest = Some(record.created_at);
            }
            Ok(false)
        })
        .await?;
        Ok(latest)
    }

    /// Of `listed` (`(leadgen_id, created_at)` of one form), the ids
    /// whose choices and decision are kept: read by key, 100 a request.
    ///
    /// # Errors
    /// [`StoreError`] when DynamoDB fails or leaves keys unread.
    pub async fn kept_form_leads(
        &self,
        site: &str,
        form: &str,
        listed: &[(String, i64)],
    ) -> Result<std::collections::HashSet<String>, StoreError> {
        let keys = listed
            .iter()
            .map(|(id, created)| (form_leads_pk(site, form), form_lead_sk(*created, id)))
            .collect();
        self.batch_read(keys)
            .await?
            .iter()
            .map(|i| {
                decode::<FormLeadItem>(i, "form lead").map(|r| FormLeadRecord::from(r).leadgen_id)
            })
            .collect()
    }
}
