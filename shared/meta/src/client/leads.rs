//! Lead Ads reads with a Page's token: one form lead (`GET /{leadgen_id}`:
//! ids, names, time, organic, platform, and its answers, held in memory
//! only to pick the options chosen), and the Page's instant forms with
//! their questions (`GET /{page}/leadgen_forms`). Everything Meta answers
//! is bounded.

use adtrail_domain::leadads::{
    Answers, FormLead, LeadForm, Question, QuestionOption, parse_created_time,
};

use super::*;

/// What is asked of a lead.
const LEAD_FIELDS: &str = "id,created_time,ad_id,ad_name,adset_id,adset_name,campaign_id,\
campaign_name,form_id,is_organic,platform,field_data";
/// What is asked of a form.
const FORM_FIELDS: &str = "id,name,status,questions{key,label,type,options}";
/// Forms read per Page at most.
const MAX_FORMS: usize = 500;
const FORMS_PAGE_SIZE: &str = "100";
/// Bounds on what a form or a lead may hold.
const MAX_QUESTIONS: usize = 100;
const MAX_OPTIONS: usize = 100;
const MAX_VALUES: usize = 50;
const MAX_KEY: usize = 128;
const MAX_VALUE: usize = 1_000;
/// A form's questions kept at most, in bytes of their JSON: the bounds
/// above allow megabytes a form, more than a DynamoDB item (400 KB) holds,
/// and a Page lists up to 500 forms. Questions past it are left out, as
/// past the hundredth; a real form takes a few kilobytes.
const MAX_QUESTION_BYTES: usize = 64 * 1024;

/// What `s` takes as a JSON string: its quotes, and its own quotes and
/// backslashes escaped.
fn json_len(s: &str) -> usize {
    s.len() + 2 + s.bytes().filter(|b| matches!(b, b'"' | b'\\')).count()
}

/// What a question takes as JSON, with its field names.
fn question_len(q: &Question) -> usize {
    let options: usize = q
        .options
        .iter()
        .map(|o| 20 + json_len(&o.key) + json_len(&o.value))
        .sum();
    48 + json_len(&q.key) + json_len(&q.label) + json_len(&q.kind) + options
}

/// A question or option key: printable, bounded.
fn key(v: &Value, name: &str) -> Option<String> {
    v.get(name)
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty() && k.len() <= MAX_KEY && !k.chars().any(char::is_control))
        .map(str::to_owned)
}

/// The most of a lead's answers kept, as JSON. The bounds above allow
/// megabytes a lead (100 questions of 50 values of 1,000 characters), past
/// what an answer of the API's may hold; a person's answers take a few
/// hundred bytes. Answers past it are left out, whole, as past the
/// hundredth question.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// What one question's answers take as JSON.
fn answer_len((key, values): &(String, Vec<String>)) -> usize {
    8 + json_len(key) + values.iter().map(|v| 1 + json_len(v)).sum::<usize>()
}

/// `field_data`: each question's key and values, bounded
/// ([`MAX_ANSWER_BYTES`] for them all).
fn answers(v: &Value) -> Answers {
    let fields = v.get("field_data").and_then(Value::as_array);
    let mut bytes = 0;
    Answers(
        fields
            .into_iter()
            .flatten()
            .take(MAX_QUESTIONS)
            .filter_map(|f| {
                let values = f
                    .get("values")
                    .and_then(Value::as_array)?
                    .iter()
                    .filter_map(Value::as_str)
                    .take(MAX_VALUES)
                    .map(|s| s.chars().take(MAX_VALUE).collect())
                    .collect();
                Some((key(f, "name")?, values))
            })
            .take_while(|answer| {
                bytes += answer_len(answer);
                bytes <= MAX_ANSWER_BYTES
            })
            .collect(),
    )
}

/// A form's questions, bounded ([`MAX_QUESTION_BYTES`] for them all); a
/// question without a key is left out.
fn questions(v: &Value) -> Vec<Question> {
    let listed = v.get("questions").and_then(Value::as_array);
    let mut bytes = 0;
    listed
        .into_iter()
        .flatten()
        .take(MAX_QUESTIONS)
        .filter_map(|q| {
            let options = q
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .take(MAX_OPTIONS)
                .filter_map(|o| {
                    Some(QuestionOption {
                        key: key(o, "key")?,
                        value: text(o, "value").unwrap_or_default(),
                    })
                })
                .collect();
            Some(Question {
                key: key(q, "key")?,
                label: text(q, "label").unwrap_or_default(),
                kind: key(q, "type").unwrap_or_default(),
                options,
            })
        })
        .take_while(|q| {
            bytes += question_len(q);
            bytes <= MAX_QUESTION_BYTES
        })
        .collect()
}

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
            answers: answers(&json),
        })
    }

    /// The Page's instant forms with their questions, every page of the
    /// listing (at most 500 forms). `synced_at` is left 0 for the caller.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn leadgen_forms(
        &self,
        page_token: &str,
        page_id: &str,
    ) -> Result<Vec<LeadForm>, GraphError> {
        let mut url = self.url(
            &format!("{page_id}/leadgen_forms"),
            &[("fields", FORM_FIELDS), ("limit", FORMS_PAGE_SIZE)],
        );
        let mut forms = vec![];
        loop {
            let (json, _) = self.get(url, page_token).await?;
            let listed: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("form list"))?;
            forms.extend(listed.data.iter().filter_map(|v| {
                Some(LeadForm {
                    page_id: page_id.to_owned(),
                    form_id: meta_id(v, "id")?,
                    name: text(v, "name").unwrap_or_default(),
                    status: key(v, "status").unwrap_or_default(),
                    questions: questions(v),
                    synced_at: 0,
                })
            }));
            match listed.paging.and_then(|p| p.next) {
                Some(next) if forms.len() < MAX_FORMS => url = self.next_url(&next)?,
                _ => break,
            }
        }
        forms.truncate(MAX_FORMS);
        Ok(forms)
    }

    /// The leads of a form created after `since_ms`, as `(leadgen_id,
    /// created_at)`, newest first, every page of the listing up to `cap`;
    /// the flag says the listing held more.
    ///
    /// # Errors
    /// [`GraphError`] classified by the domain.
    pub async fn form_lead_ids(
        &self,
        page_token: &str,
        form_id: &str,
        since_ms: i64,
        cap: usize,
    ) -> Result<(Vec<(String, i64)>, bool), GraphError> {
        let filtering = format!(
            r#"[{{"field":"time_created","operator":"GREATER_THAN","value":{}}}]"#,
            since_ms.div_euclid(1_000)
        );
        let mut url = self.url(
            &format!("{form_id}/leads"),
            &[
                ("fields", "id,created_time"),
                ("filtering", &filtering),
                ("limit", FORMS_PAGE_SIZE),
            ],
        );
        let mut found = vec![];
        loop {
            let (json, _) = self.get(url, page_token).await?;
            let listed: Paged =
                serde_json::from_value(json).map_err(|_| GraphError::malformed("lead list"))?;
            found.extend(listed.data.iter().filter_map(|v| {
                let created = v
                    .get("created_time")
                    .and_then(Value::as_str)
                    .and_then(parse_created_time)?;
                Some((meta_id(v, "id")?, created))
            }));
            match listed.paging.and_then(|p| p.next) {
                Some(next) if found.len() < cap => url = self.next_url(&next)?,
                Some(_) => return Ok((found, true)),
                None => return Ok((found, false)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lead at the per-answer bounds (100 questions of 50 values of
    /// 1,000 quotes) would be 10 MB as JSON: its first answers are kept up
    /// to 64 KB, whole; a person's answers are kept as they are.
    #[test]
    fn a_huge_leads_answers_are_kept_up_to_64_kb() {
        let field = |q: usize, value: &str, n: usize| serde_json::json!({"name": format!("q{q}"), "values": vec![value; n]});
        let huge = serde_json::json!({"field_data": (0..100).map(|q| field(q, &"\"".repeat(1_000), 50)).collect::<Vec<_>>()});
        let kept = answers(&huge).0;
        assert!(kept.is_empty(), "a question's answers alone pass 64 KB");
        let long = serde_json::json!({"field_data": (0..100).map(|q| field(q, &"x".repeat(1_000), 5)).collect::<Vec<_>>()});
        let kept = answers(&long).0;
        assert!((10..100).contains(&kept.len()), "{} kept", kept.len());
        assert_eq!(kept[0].0, "q0");
        assert!(kept.iter().all(|(_, values)| values.len() == 5));
        let written = serde_json::to_string(&kept).unwrap().len();
        assert!(written <= MAX_ANSWER_BYTES, "{written}");
        let person = serde_json::json!({"field_data": [field(0, "Maria", 1), field(1, "maria@example.com", 1)]});
        assert_eq!(answers(&person).0.len(), 2);
    }

    /// A form at the per-question bounds (100 questions of 100 options,
    /// each a key of 128 and a value of 400 characters) would be megabytes:
    /// its first questions are kept up to 64 KB, whole, in Meta's order.
    #[test]
    fn a_huge_form_keeps_its_first_questions_up_to_64_kb() {
        let option = |q: usize, o: usize| serde_json::json!({"key": format!("q{q}o{o}{}", "k".repeat(120)), "value": "\"".repeat(400)});
        let form = serde_json::json!({"questions": (0..100).map(|q| serde_json::json!({
            "key": format!("q{q}"), "label": "l".repeat(400), "type": "CUSTOM",
            "options": (0..100).map(|o| option(q, o)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()});
        let kept = questions(&form);
        // A question is about 137 KB here; the first alone passes 64 KB.
        assert!(kept.is_empty(), "{} kept", kept.len());

        let small = serde_json::json!({"questions": (0..100).map(|q| serde_json::json!({
            "key": format!("q{q}"), "label": "Qual?", "type": "CUSTOM",
            "options": (0..10).map(|o| serde_json::json!({"key": format!("o{o}"), "value": "x".repeat(80)})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()});
        let kept = questions(&small);
        assert!((50..100).contains(&kept.len()), "{} kept", kept.len());
        assert_eq!(kept[0].key, "q0");
        assert!(kept.iter().all(|q| q.options.len() == 10));
        let bytes: usize = kept.iter().map(question_len).sum();
        assert!(bytes <= MAX_QUESTION_BYTES);
        // What the store writes is no larger than what was counted.
        let written: usize = kept
            .iter()
            .map(|q| {
                serde_json::json!({"key": q.key, "label": q.label, "kind": q.kind,
                    "options": q.options.iter().map(|o| serde_json::json!({"key": o.key, "value": o.value})).collect::<Vec<_>>()})
                .to_string()
                .len()
            })
            .sum();
        assert!(written <= bytes, "{written} > {bytes}");
    }
}
