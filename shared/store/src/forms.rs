//! A site's Lead Ads forms (as Meta lists them, replaced at each read of a
//! linked Page's forms), the host's rules for each, and each form lead's
//! choices and decision (written once per lead, kept 90 days), read by
//! form and time for the rules' counts, simulations and the form-lead
//! list.

use std::collections::BTreeMap;

use adtrail_domain::leadads::{FORM_LEAD_KEPT_MS, FormLeadRecord, FormRules, LeadForm};

use crate::attr::s;
use crate::items::{FormItem, FormLeadItem, RulesItem, decode, encode};
use crate::keys::{
    FORM_SK_PREFIX, SK, form_lead_sk, form_leads_pk, form_sk, rules_sk, site_forms_pk,
};
use crate::write::applied;
use crate::{Forms, StoreError};

/// Query pages read for one site's forms and rules.
const MAX_FORM_PAGES: usize = 10;

/// A site's forms and the rules set on them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteForms {
    pub forms: Vec<LeadForm>,
    /// By form: the rules and when they were set.
    pub rules: BTreeMap<String, (FormRules, i64)>,
}

impl Forms<'_> {
    /// The site's forms and rules, in one query.
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
        self.query_pages(query, MAX_FORM_PAGES, |items| {
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

    /// Keeps a form lead's choices and decision, once: answers `None` when
    /// written now, or the record an earlier delivery wrote (its decision
    /// stands, whatever the rules say now).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn record_form_lead(
        &self,
        r: &FormLeadRecord,
    ) -> Result<Option<FormLeadRecord>, StoreError> {
        let pk = form_leads_pk(&r.site_id, &r.form_id);
        let sk = form_lead_sk(r.created_at, &r.leadgen_id);
        let ttl = (r.created_at + FORM_LEAD_KEPT_MS).div_euclid(1_000);
        let item = encode(
            &FormLeadItem::of(r, pk.clone(), sk.clone(), ttl),
            "form lead",
        )?;
        let put = self
            .ddb
            .put_item()
            .table_name(&self.names.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        if applied(put)?.is_some() {
            return Ok(None);
        }
        let existing = self
            .read_item(pk, &sk)
            .await?
            .ok_or(StoreError::Condition("the form lead vanished"))?;
        Ok(Some(decode::<FormLeadItem>(&existing, "form lead")?.into()))
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
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(form_leads_pk(site, form)))
            .expression_attribute_values(":from", s(form_lead_sk(from.max(0), "")))
            .expression_attribute_values(":to", s(form_lead_sk(to.max(0), "")))
            .limit(i32::try_from(cap.min(1_000) + 1).unwrap_or(1_000));
        let mut found = vec![];
        let mut partial = false;
        self.query_pages(query, cap / 1_000 + 2, |items| {
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
