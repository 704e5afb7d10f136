//! A form lead read with its Page's token: `GET /{leadgen_id}` with only
//! the fields adtrail keeps (ids, names, time, organic, platform), never
//! `field_data`: the person's answers are not read where they are not
//! shown.

use adtrail_domain::leadads::{FormLead, parse_created_time};

use super::*;

/// What is asked of a lead: everything but the answers.
const LEAD_FIELDS: &str = "id,created_time,ad_id,ad_name,adset_id,adset_name,campaign_id,\
campaign_name,form_id,is_organic,platform";

/// Meta's `is_organic`: a boolean, or `"1"`/`"0"` as its exports give it.
fn organic(v: &Value) -> bool {
    match v.get("is_organic") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s == "1" || s == "true",
        Some(Value::Number(n)) => n.as_u64() == Some(1),
        _ => false,
    }
}

impl GraphClient {
    /// Reads one form lead with the Page's token.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain; an answer whose `id` is not
    /// the lead asked for, or without a readable `created_time`, is
    /// malformed.
    pub async fn form_lead(
        &self,
        page_token: &str,
        leadgen_id: &str,
    ) -> Result<FormLead, GraphError> {
        check_meta_numeric("leadgenId", leadgen_id)
            .map_err(|_| GraphError::malformed("lead id"))?;
        let url = self.url(leadgen_id, &[("fields", LEAD_FIELDS)]);
        let (json, _) = self.get(url, page_token).await?;
        if meta_id(&json, "id").as_deref() != Some(leadgen_id) {
            return Err(GraphError::malformed("lead"));
        }
        let created_at = json
            .get("created_time")
            .and_then(Value::as_str)
            .and_then(parse_created_time)
            .ok_or_else(|| GraphError::malformed("lead time"))?;
        Ok(FormLead {
            leadgen_id: leadgen_id.to_owned(),
            form_id: meta_id(&json, "form_id"),
            ad_id: meta_id(&json, "ad_id"),
            ad_name: text(&json, "ad_name"),
            adset_id: meta_id(&json, "adset_id"),
            adset_name: text(&json, "adset_name"),
            campaign_id: meta_id(&json, "campaign_id"),
            campaign_name: text(&json, "campaign_name"),
            created_at,
            organic: organic(&json),
            platform: text(&json, "platform")
                .filter(|p| p.len() <= 16 && p.bytes().all(|b| b.is_ascii_lowercase())),
        })
    }
}
