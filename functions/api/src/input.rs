//! Reading requests: bodies bounded and parsed strictly (unknown fields and
//! wrong types are errors naming the field), query strings, path ids.

use std::collections::{BTreeSet, HashMap};

use adtrail_domain::SiteId;
use adtrail_domain::dates::is_day_start;
use adtrail_domain::ids::IdError;
use adtrail_domain::time::DAY_MS;
use lambda_http::{Body, Request, RequestExt};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The largest body any route takes.
pub const MAX_BODY: usize = 64 * 1024;

impl From<IdError> for ApiError {
    fn from(e: IdError) -> Self {
        ApiError::invalid(e.to_string())
    }
}

/// An integer field that also takes a JSON number with a zero fraction
/// (`117.0`): JSON Schema calls both integers, and some clients send the
/// second. Anything fractional or out of `i64` is a type error.
///
/// # Errors
/// A serde error naming what was expected.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(de: D) -> Result<i64, D::Error> {
    let n = serde_json::Number::deserialize(de)?;
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
        _ => Err(serde::de::Error::custom(
            "expected a whole number (an integer)",
        )),
    }
}

/// [`whole_number`] for an optional field (`null` or absent is `None`).
///
/// # Errors
/// A serde error naming what was expected.
pub fn optional_whole_number<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    struct Whole(#[serde(deserialize_with = "whole_number")] i64);
    Ok(Option::<Whole>::deserialize(de)?.map(|w| w.0))
}

/// The body's exact bytes, as the caller sent them (API Gateway's base64
/// already undone).
pub fn body_bytes(req: &Request) -> &[u8] {
    match req.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => b"",
    }
}

/// Parses the JSON body into `T`, naming the field that is wrong.
///
/// # Errors
/// `INVALID_ARGUMENT` for a missing, oversized or malformed body.
pub fn json_body<T: DeserializeOwned>(req: &Request) -> Result<T, ApiError> {
    let bytes = body_bytes(req);
    if bytes.len() > MAX_BODY {
        return Err(ApiError::invalid(format!(
            "body is larger than {MAX_BODY} bytes"
        )));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("body is required (a JSON object)"));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::invalid("body: is not valid JSON");
        }
        let what = inner.to_string();
        // serde's own words, cut before its position note.
        let what = what
            .split(" at line ")
            .next()
            .unwrap_or("malformed")
            .to_owned();
        if matches!(path.as_str(), "." | "?" | "") {
            ApiError::invalid(format!("body: {what}"))
        } else {
            ApiError::invalid(format!("{path}: {what}"))
        }
    })
}

/// The top-level keys of a JSON object body, `null` values included: for
/// the rules that turn on a field's presence, not its value.
pub fn body_keys(req: &Request) -> Vec<String> {
    let bytes: &[u8] = match req.body() {
        Body::Text(t) => t.as_bytes(),
        Body::Binary(b) => b,
        _ => b"",
    };
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(bytes)
        .map(|m| m.into_iter().map(|(k, _)| k).collect())
        .unwrap_or_default()
}

/// The query string's parameters; a repeated parameter is an error.
///
/// # Errors
/// `INVALID_ARGUMENT` naming a repeated or unknown parameter.
pub fn query(req: &Request, allowed: &[&str]) -> Result<HashMap<String, String>, ApiError> {
    let params = req.query_string_parameters();
    let mut out = HashMap::new();
    for (key, _) in params.iter() {
        if !allowed.contains(&key) {
            return Err(ApiError::invalid(format!("{key}: unknown query parameter")));
        }
        let values = params.all(key).unwrap_or_default();
        if values.len() > 1 {
            return Err(ApiError::invalid(format!("{key}: given more than once")));
        }
        if let Some(v) = values.first() {
            out.insert(key.to_owned(), (*v).to_owned());
        }
    }
    Ok(out)
}

/// An epoch-ms query parameter.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the parameter.
pub fn millis(params: &HashMap<String, String>, name: &str) -> Result<Option<i64>, ApiError> {
    params
        .get(name)
        .map(|v| {
            v.parse::<i64>()
                .ok()
                .filter(|n| (0..=253_402_300_799_999).contains(n))
                .ok_or_else(|| ApiError::invalid(format!("{name}: must be epoch milliseconds")))
        })
        .transpose()
}

/// Text a person typed (a name): 1..=max characters, none hidden, not all
/// blank (the domain's rule, which the OpenAPI document states).
///
/// # Errors
/// `INVALID_ARGUMENT` naming the field.
pub fn plain_text(field: &str, value: &str, max: usize) -> Result<String, ApiError> {
    adtrail_domain::ids::check_plain_text(value, max)
        .map_err(|why| ApiError::invalid(format!("{field}: {why}")))?;
    Ok(value.to_owned())
}

/// `siteIds`: 1 to 10 unique, comma-separated.
pub(crate) fn site_ids(text: Option<&String>) -> Result<Vec<SiteId>, ApiError> {
    let text = text.ok_or_else(|| {
        ApiError::invalid("siteIds: required (1 to 10 site ids, comma-separated)")
    })?;
    let mut seen = BTreeSet::new();
    let mut ids = vec![];
    for raw in text.split(',') {
        let id = SiteId::parse("siteIds", raw)?;
        if !seen.insert(id.clone()) {
            return Err(ApiError::invalid("siteIds: must be unique"));
        }
        ids.push(id);
    }
    if ids.len() > 10 {
        return Err(ApiError::invalid("siteIds: at most 10 sites"));
    }
    Ok(ids)
}

/// A report's `siteIds`, `from` and `to` (its only parameters), parsed.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the parameter.
pub(crate) fn report_params(
    req: &Request,
    max_days: i64,
) -> Result<(Vec<SiteId>, i64, i64), ApiError> {
    let params = query(req, &["siteIds", "from", "to"])?;
    let ids = site_ids(params.get("siteIds"))?;
    let (from, to) = day_range(&params, max_days)?;
    Ok((ids, from, to))
}

/// `from` and `to`: UTC day starts in epoch ms, inclusive, covering at most
/// `max_days` days.
///
/// # Errors
/// `INVALID_ARGUMENT` naming the parameter.
pub(crate) fn day_range(
    params: &HashMap<String, String>,
    max_days: i64,
) -> Result<(i64, i64), ApiError> {
    let from = millis(params, "from")?
        .ok_or_else(|| ApiError::invalid("from: required (a UTC day start in epoch ms)"))?;
    let to = millis(params, "to")?
        .ok_or_else(|| ApiError::invalid("to: required (a UTC day start in epoch ms)"))?;
    for (name, v) in [("from", from), ("to", to)] {
        if !is_day_start(v) {
            return Err(ApiError::invalid(format!(
                "{name}: must be a UTC day start (a multiple of 86400000)"
            )));
        }
    }
    if to < from {
        return Err(ApiError::invalid("to: must not be before from"));
    }
    if (to - from) / DAY_MS + 1 > max_days {
        return Err(ApiError::invalid(format!(
            "to: the range covers at most {max_days} days"
        )));
    }
    Ok((from, to))
}

/// A token Meta could issue: printable, no spaces, bounded.
pub(crate) fn check_token(token: &str) -> Result<(), ApiError> {
    if token.is_empty() || token.len() > 4_096 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "accessToken: must be 1 to 4096 printable characters without spaces",
        ));
    }
    Ok(())
}

/// The body of a link (an ad account's, a Page's): the owner whose token
/// lists it, and `onlyOwn`, with which a host asks to be refused, as a
/// dashboard is, what another owner made.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OwnerBody {
    pub(crate) owner_key: String,
    #[serde(default)]
    pub(crate) only_own: bool,
}
