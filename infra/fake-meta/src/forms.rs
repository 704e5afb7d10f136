//! The sample Pages' instant forms as Lead Ads lists them: each form with
//! its questions (`GET /{page}/leadgen_forms`), and a form's leads, newest
//! first, filtered on their creation time and paged with cursors
//! (`GET /{form}/leads`), both only with the form's Page's own token.

use std::collections::BTreeMap;

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::leads::{StoredLead, meta_time};
use crate::server::Shared;

/// The sample Pages' instant forms: `(form id, Page id, name)`.
pub const SAMPLE_FORMS: [(&str, &str, &str); 2] = [
    ("700800900100", "100200300", "Loja X · Orçamento"),
    ("700800900200", "900800700", "Pet Mania · Banho e tosa"),
];

/// A sample form's questions, as `questions{key,label,type,options}`:
/// name, e-mail and phone, and multiple-choice questions with options.
pub fn sample_questions(form: &str) -> Value {
    let contact = [
        json!({"key": "full_name", "label": "Nome completo", "type": "FULL_NAME"}),
        json!({"key": "email", "label": "E-mail", "type": "EMAIL"}),
        json!({"key": "phone_number", "label": "Telefone", "type": "PHONE"}),
    ];
    let custom = if form == SAMPLE_FORMS[0].0 {
        vec![
            json!({"key": "interesse", "label": "O que você procura?", "type": "CUSTOM",
                "options": [{"key": "comprar", "value": "Quero comprar"},
                            {"key": "orcamento", "value": "Só um orçamento"},
                            {"key": "curioso", "value": "Só estou olhando"}]}),
            json!({"key": "prazo", "label": "Para quando?", "type": "CUSTOM",
                "options": [{"key": "agora", "value": "Este mês"},
                            {"key": "depois", "value": "Mais tarde"}]}),
        ]
    } else {
        vec![
            json!({"key": "servico", "label": "Serviço", "type": "CUSTOM",
            "options": [{"key": "banho", "value": "Banho"}, {"key": "tosa", "value": "Tosa"}]}),
        ]
    };
    Value::Array(contact.into_iter().chain(custom).collect())
}

/// `GET /{page}/leadgen_forms` with the Page's own token, or `None` when
/// the path is not a sample Page's forms.
pub(crate) fn list_forms(rest: &str, fields: Option<&str>, token: &str) -> Option<Response> {
    let page = rest.strip_suffix("/leadgen_forms")?;
    if !crate::agency::SAMPLE_PAGES
        .iter()
        .any(|(id, _, _)| *id == page)
    {
        return None;
    }
    if let Some(refused) = crate::pages::page_token_refused(page, token) {
        return Some(refused);
    }
    let asked = fields.unwrap_or("id");
    let data: Vec<Value> = SAMPLE_FORMS
        .iter()
        .filter(|(_, p, _)| *p == page)
        .map(|(id, _, name)| {
            let mut form = json!({"id": id});
            if asked.contains("name") {
                form["name"] = json!(name);
            }
            if asked.contains("status") {
                form["status"] = json!("ACTIVE");
            }
            if asked.contains("questions") {
                form["questions"] = sample_questions(id);
            }
            form
        })
        .collect();
    Some(
        Json(json!({"data": data, "paging": {"cursors": {"before": "a", "after": "b"}}}))
            .into_response(),
    )
}

/// `GET /{form}/leads` with the form's Page's token: its leads, newest
/// first, filtered on `time_created` (`GREATER_THAN`,
/// `GREATER_THAN_OR_EQUAL` or `LESS_THAN`, epoch seconds), `limit` a page
/// (at most 100) and an `after` cursor whose `paging.next` stays on the
/// fake's origin. `None` when `rest` is not a sample form's leads.
pub(crate) fn list_form_leads(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    token: &str,
) -> Option<Response> {
    let form = rest.strip_suffix("/leads")?;
    let (_, page, _) = SAMPLE_FORMS.iter().find(|(id, _, _)| *id == form)?;
    if let Some(refused) = crate::pages::page_token_refused(page, token) {
        return Some(refused);
    }
    let mut filters: Vec<(String, i64)> = vec![];
    if let Some(f) = query.get("filtering") {
        let Ok(Value::Array(list)) = serde_json::from_str::<Value>(f) else {
            return Some(crate::wire::bad_param(
                "(#100) filtering must be a JSON array",
            ));
        };
        for item in list {
            let (Some("time_created"), Some(op), Some(v)) = (
                item["field"].as_str(),
                item["operator"].as_str(),
                item["value"].as_i64(),
            ) else {
                return Some(crate::wire::bad_param(
                    "(#100) filtering: field, operator, value",
                ));
            };
            filters.push((op.to_owned(), v));
        }
    }
    let keep = |created: i64| {
        filters.iter().all(|(op, v)| match op.as_str() {
            "GREATER_THAN" => created > *v,
            "GREATER_THAN_OR_EQUAL" => created >= *v,
            "LESS_THAN" => created < *v,
            _ => false,
        })
    };
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(25)
        .clamp(1, 100);
    let after = query
        .get("after")
        .and_then(|a| a.parse::<usize>().ok())
        .unwrap_or(0);
    let inner = shared.inner.lock().unwrap_or_else(|e| e.into_inner());
    let mut leads: Vec<(&String, &StoredLead)> = inner
        .form_leads
        .iter()
        .filter(|(_, l)| l.form == form && keep(l.created))
        .collect();
    leads.sort_by(|a, b| b.1.created.cmp(&a.1.created).then(b.0.cmp(a.0)));
    let data: Vec<Value> = leads
        .iter()
        .skip(after)
        .take(limit)
        .map(|(id, l)| json!({"id": id, "created_time": meta_time(l.created), "form_id": l.form}))
        .collect();
    let mut paging = json!({"cursors": {"before": after.to_string(), "after": (after + data.len()).to_string()}});
    if after + data.len() < leads.len() {
        let mut next: Vec<(String, String)> = query
            .iter()
            .filter(|(k, _)| k.as_str() != "after")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        next.push(("after".into(), (after + data.len()).to_string()));
        let q = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(next)
            .finish();
        paging["next"] = json!(format!(
            "{}/{}/{rest}?{q}",
            shared.base_url,
            crate::wire::VERSION
        ));
    }
    Some(Json(json!({"data": data, "paging": paging})).into_response())
}
