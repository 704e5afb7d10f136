//! The fake's Conversions API, `POST /{pixelId}/events`, with Meta's rules:
//! 1 to 1,000 events a request, and one invalid event (a malformed hash, a
//! missing field, an `event_time` older than 7 days) rejects the whole
//! request. What it accepts is recorded for the tests.

use serde::Serialize;
use serde_json::Value;

/// An event the fake accepted.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedEvent {
    pub pixel_id: String,
    pub event_id: String,
    pub event_name: String,
    /// Seconds.
    pub event_time: i64,
    pub action_source: String,
    pub user_data: Value,
    pub custom_data: Option<Value>,
    pub test_event_code: Option<String>,
}

const MAX_EVENTS: usize = 1_000;
const SEVEN_DAYS_S: i64 = 7 * 86_400;
const ACTION_SOURCES: [&str; 8] = [
    "email",
    "website",
    "app",
    "phone_call",
    "chat",
    "physical_store",
    "system_generated",
    "other",
];

fn is_digest(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Hashed `user_data` keys: an array (or one string) of SHA-256 digests.
fn hashed(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_digest),
        other => is_digest(other),
    }
}

/// A lead id as Meta takes it: a number or a string of 15 to 17 digits.
fn lead_id(v: &Value) -> bool {
    let text = match v {
        Value::Number(n) if n.is_u64() => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return false,
    };
    (15..=17).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit())
}

/// `user_data`: a customer information parameter, each hashed one a
/// SHA-256 digest, the plain ones (IP, user agent, click ids, a lead id)
/// well formed.
fn check_user_data(user: &serde_json::Map<String, Value>) -> Result<(), &'static str> {
    if user.is_empty() {
        return Err("Invalid parameter: user_data must carry a customer information parameter");
    }
    for (key, value) in user {
        match key.as_str() {
            "ph" | "external_id" | "country" | "em" | "fn" | "ln" | "ct" | "st" | "zp"
                if hashed(value) => {}
            // Sent plain, as Meta documents: never hashed.
            "client_ip_address"
                if value
                    .as_str()
                    .is_some_and(|v| v.parse::<std::net::IpAddr>().is_ok()) => {}
            "client_user_agent" | "fbc" | "fbp" | "ctwa_clid"
                if value
                    .as_str()
                    .is_some_and(|v| !v.is_empty() && !is_digest(&Value::from(v))) => {}
            // A Lead Ads lead's id: Meta's int64, 15 to 17 digits, plain.
            "lead_id" if lead_id(value) => {}
            _ => return Err("Invalid parameter: user_data holds a malformed hash"),
        }
    }
    if user
        .keys()
        .all(|k| k == "client_ip_address" || k == "client_user_agent")
    {
        return Err("Invalid parameter: user_data must carry a customer information parameter");
    }
    Ok(())
}

/// Conversion Leads: a lead id in `user_data` needs the three fields
/// Meta's payload specification requires with it.
fn check_conversion_leads(
    user: &serde_json::Map<String, Value>,
    source: &str,
    custom: Option<&Value>,
) -> Result<(), &'static str> {
    // Conversion Leads (a lead id in `user_data`): Meta's payload
    // specification requires these three with it.
    if user.contains_key("lead_id") {
        let c = custom;
        let crm = c
            .and_then(|c| c.get("event_source"))
            .and_then(Value::as_str)
            == Some("crm");
        let named = c
            .and_then(|c| c.get("lead_event_source"))
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if source != "system_generated" || !crm || !named {
            return Err(
                "Invalid parameter: a Conversion Leads event needs action_source \
                 system_generated, custom_data.event_source crm and lead_event_source",
            );
        }
    }
    Ok(())
}

/// A Purchase carries its value and its currency in `custom_data`.
fn check_purchase(custom: Option<&Value>) -> Result<(), &'static str> {
    let c = custom.ok_or("Invalid parameter: a Purchase needs custom_data")?;
    let value_ok = c
        .get("value")
        .and_then(Value::as_f64)
        .is_some_and(|v| v >= 0.0);
    let currency_ok = c
        .get("currency")
        .and_then(Value::as_str)
        .is_some_and(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_uppercase()));
    if !value_ok || !currency_ok {
        return Err("Invalid parameter: a Purchase needs custom_data.value and currency");
    }
    Ok(())
}

/// Checks one event; `Err` is Meta's message.
fn check_event(
    e: &Value,
    now_s: i64,
    reject_ids: &[String],
) -> Result<AcceptedEvent, &'static str> {
    let name = e
        .get("event_name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 100)
        .ok_or("Invalid parameter: event_name")?;
    let time = e
        .get("event_time")
        .and_then(Value::as_i64)
        .ok_or("Invalid parameter: event_time must be an integer in seconds")?;

    if time > now_s + 60 {
        return Err("Invalid parameter: event_time is in the future");
    }
    let source = e
        .get("action_source")
        .and_then(Value::as_str)
        .filter(|s| ACTION_SOURCES.contains(s))
        .ok_or("Invalid parameter: action_source")?;
    // 7 days, or 62 for a physical store's events.
    let max_age = if source == "physical_store" {
        62 * 86_400
    } else {
        SEVEN_DAYS_S
    };
    if time < now_s - max_age {
        return Err("Invalid parameter: event_time is too far in the past");
    }
    let event_id = e
        .get("event_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 256)
        .ok_or("Invalid parameter: event_id")?;
    if reject_ids.iter().any(|r| r == event_id) {
        return Err("Invalid parameter: the event's user_data failed validation");
    }
    let user = e
        .get("user_data")
        .and_then(Value::as_object)
        .ok_or("Invalid parameter: user_data is required")?;
    check_user_data(user)?;
    if source == "website"
        && !e
            .get("event_source_url")
            .and_then(Value::as_str)
            .is_some_and(|u| u.starts_with("http"))
    {
        return Err("Invalid parameter: event_source_url is required for website events");
    }
    let custom = e.get("custom_data").cloned();
    check_conversion_leads(user, source, custom.as_ref())?;
    if name == "Purchase" {
        check_purchase(custom.as_ref())?;
    }
    Ok(AcceptedEvent {
        pixel_id: String::new(),
        event_id: event_id.to_owned(),
        event_name: name.to_owned(),
        event_time: time,
        action_source: source.to_owned(),
        user_data: Value::Object(user.clone()),
        custom_data: custom,
        test_event_code: None,
    })
}

/// Checks a whole request: every event, or none.
pub(crate) fn check_request(
    pixel_id: &str,
    body: &[u8],
    now_ms: i64,
    reject_ids: &[String],
) -> Result<Vec<AcceptedEvent>, &'static str> {
    let body: Value = serde_json::from_slice(body).map_err(|_| "Invalid parameter: body")?;
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or("Invalid parameter: data is required")?;
    if data.is_empty() || data.len() > MAX_EVENTS {
        return Err("Invalid parameter: data must hold 1 to 1000 events");
    }
    let test_code = match body.get("test_event_code") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => return Err("Invalid parameter: test_event_code"),
    };
    let now_s = now_ms.div_euclid(1_000);
    data.iter()
        .map(|e| {
            let mut accepted = check_event(e, now_s, reject_ids)?;
            accepted.pixel_id = pixel_id.to_owned();
            accepted.test_event_code = test_code.clone();
            Ok(accepted)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const H: &str = "5f2b8b0f3c6a4e1e9d7c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e";

    fn event(time: i64) -> Value {
        json!({"event_name": "Lead", "event_time": time, "event_id": "e1", "action_source": "chat", "user_data": {"ph": [H]}})
    }

    #[test]
    fn one_bad_event_rejects_the_request() {
        let now = 1_800_000_000_000;
        let ok = json!({"data": [event(now / 1000)]}).to_string();
        assert_eq!(
            check_request("1", ok.as_bytes(), now, &[]).unwrap().len(),
            1
        );
        let mut bad = event(now / 1000);
        bad["user_data"]["ph"] = json!(["5511999991234"]);
        let mixed = json!({"data": [event(now / 1000), bad]}).to_string();
        assert!(check_request("1", mixed.as_bytes(), now, &[]).is_err());
        let old = json!({"data": [event(now / 1000 - SEVEN_DAYS_S - 1)]}).to_string();
        assert!(check_request("1", old.as_bytes(), now, &[]).is_err());
        let many = json!({"data": vec![event(now / 1000); 1001]}).to_string();
        assert!(check_request("1", many.as_bytes(), now, &[]).is_err());
        assert!(check_request("1", ok.as_bytes(), now, &["e1".into()]).is_err());
    }

    #[test]
    fn conversion_leads_events_carry_their_three_fields() {
        let now = 1_800_000_000_000;
        let lead = |source: &str, custom: Value| {
            json!({"data": [{"event_name": "QualifiedLead", "event_time": now / 1000,
                "event_id": "e2", "action_source": source,
                "user_data": {"lead_id": 444_444_444_444_444_u64}, "custom_data": custom}]})
            .to_string()
        };
        let full = json!({"event_source": "crm", "lead_event_source": "adtrail"});
        assert!(
            check_request(
                "1",
                lead("system_generated", full.clone()).as_bytes(),
                now,
                &[]
            )
            .is_ok()
        );
        assert!(check_request("1", lead("chat", full).as_bytes(), now, &[]).is_err());
        let unnamed = json!({"event_source": "crm"});
        assert!(
            check_request("1", lead("system_generated", unnamed).as_bytes(), now, &[]).is_err()
        );
        let short = lead(
            "system_generated",
            json!({"event_source": "crm", "lead_event_source": "x"}),
        )
        .replace("444444444444444", "4444");
        assert!(check_request("1", short.as_bytes(), now, &[]).is_err());
    }
}
