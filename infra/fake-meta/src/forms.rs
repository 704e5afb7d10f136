//! The sample Pages' instant forms as Lead Ads lists them: each form with
//! its questions (`GET /{page}/leadgen_forms`), and a form's leads, newest
//! first, filtered on their creation time and paged with cursors
//! (`GET /{form}/leads`), both only with the form's Page's own token.

use std::collections::BTreeMap;

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::Knobs;
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

/// The first sample Page's wide forms ([`crate::Knobs::wide_forms`]):
/// `(form id, name, status)`, one in ten `ACTIVE` (the first of them),
/// the rest `ARCHIVED`.
pub fn wide_forms(n: usize) -> Vec<(String, String, &'static str)> {
    (0..n)
        .map(|i| {
            let status = if i % 10 == 0 { "ACTIVE" } else { "ARCHIVED" };
            (
                format!("7009{i:08}"),
                format!("Formulário largo {i}"),
                status,
            )
        })
        .collect()
}

/// A wide form's questions: eight multiple-choice questions of ten
/// options, each option's text 350 characters, about 30 KB in all; the
/// first wide form's a hundred questions of thirty options (1.1 MB, more
/// than a DynamoDB item holds).
fn wide_questions(form: &str) -> Value {
    let (questions, options) = if form == "700900000000" {
        (100, 30)
    } else {
        (8, 10)
    };
    (0..questions)
        .map(|q| {
            json!({"key": format!("pergunta_{q}"), "label": format!("Pergunta {q} de {form}"), "type": "CUSTOM",
                "options": (0..options).map(|o| json!({"key": format!("opcao_{o}"), "value": format!("{o} {}", "x".repeat(348))})).collect::<Vec<_>>()})
        })
        .collect()
}

/// The Page whose form `form` is, sample or wide.
fn page_of(form: &str, knobs: &Knobs) -> Option<&'static str> {
    SAMPLE_FORMS
        .iter()
        .find(|(id, _, _)| *id == form)
        .map(|(_, page, _)| *page)
        .or_else(|| {
            wide_forms(knobs.wide_forms)
                .iter()
                .any(|(id, _, _)| id == form)
                .then_some(SAMPLE_FORMS[0].1)
        })
}

/// `GET /{page}/leadgen_forms` with the Page's own token, or `None` when
/// the path is not a sample Page's forms: `limit` a page (25 unless
/// asked) and an `after` cursor, as Meta pages a list.
pub(crate) fn list_forms(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Option<Response> {
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
    let size = match crate::wire::page_size(query, knobs, 25) {
        Ok(size) => size,
        Err(refused) => return Some(refused),
    };
    let asked = query.get("fields").map_or("id", String::as_str);
    let wide = if page == SAMPLE_FORMS[0].1 {
        wide_forms(knobs.wide_forms)
    } else {
        vec![]
    };
    let listed = SAMPLE_FORMS
        .iter()
        .filter(|(_, p, _)| *p == page)
        .map(|(id, _, name)| ((*id).to_owned(), (*name).to_owned(), "ACTIVE"))
        .chain(wide);
    let data: Vec<Value> = listed
        .map(|(id, name, status)| {
            let mut form = json!({"id": id});
            if asked.contains("name") {
                form["name"] = json!(name);
            }
            if asked.contains("status") {
                form["status"] = json!(status);
            }
            if asked.contains("questions") {
                form["questions"] = if id.starts_with("7009") {
                    wide_questions(&id)
                } else {
                    sample_questions(&id)
                };
            }
            form
        })
        .collect();
    Some(crate::wire::paged(shared, rest, query, data, size, token))
}

/// `GET /{form}/leads` with the form's Page's token: its leads, newest
/// first, filtered on `time_created` (`GREATER_THAN`,
/// `GREATER_THAN_OR_EQUAL` or `LESS_THAN`, epoch seconds), `limit` a page
/// (at most 100) and an `after` cursor whose `paging.next` stays on the
/// fake's origin. `None` when `rest` is not a sample or wide form's leads.
pub(crate) fn list_form_leads(
    shared: &Shared,
    rest: &str,
    query: &BTreeMap<String, String>,
    knobs: &Knobs,
    token: &str,
) -> Option<Response> {
    let form = rest.strip_suffix("/leads")?;
    let page = page_of(form, knobs)?;
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
