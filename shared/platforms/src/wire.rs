//! What Pinterest's and Snap's wire formats share (both follow Meta's
//! names): the hashes as arrays, the plain signals under each platform's
//! names, the value, currency and order.

use adtrail_domain::capi::Conversion;
use adtrail_domain::contact::ContactHashes;
use adtrail_domain::destinations::platform_event;
use adtrail_domain::events::ActionSource;
use adtrail_domain::identifiers::Platform;
use serde_json::{Map, Value, json};

/// How a platform that follows Meta's event format names its parts.
pub(crate) struct Dialect {
    pub(crate) platform: Platform,
    /// adtrail's plain signals → the platform's names.
    pub(crate) plain: &'static [(&'static str, &'static str)],
    /// The value as a decimal string (Pinterest) or a number (Snap).
    pub(crate) value_as_text: bool,
    /// `action_source` for a website event, and for any other.
    pub(crate) web: &'static str,
    pub(crate) offline: &'static str,
    /// The event name when the platform has none for adtrail's.
    pub(crate) fallback: &'static str,
}

/// One row in a Meta-like wire format.
pub(crate) fn event(c: &Conversion, d: &Dialect) -> Value {
    let hashes = c.hashes.clone().unwrap_or_default();
    let web =
        c.action_source.as_deref().and_then(ActionSource::parse) == Some(ActionSource::Website);
    let mut e = json!({
        "event_name": platform_event(d.platform, c.event_name).unwrap_or(d.fallback),
        "action_source": if web { d.web } else { d.offline },
        "event_time": c.event_time.div_euclid(1_000),
        "event_id": c.event_id,
        "user_data": user_data(&hashes, d.plain),
        "custom_data": custom_data(c, d.value_as_text),
    });
    if let Some(url) = &c.source_url {
        e["event_source_url"] = json!(url);
    }
    e
}

/// A value in the currency's units, from minor units.
pub fn units(cents: i64, currency: &str) -> f64 {
    let exponent = adtrail_domain::money::Currency::parse(currency).map_or(2, |c| c.exponent());
    cents as f64 / 10f64.powi(exponent as i32)
}

/// `user_data`: each hash as a one-element array under Meta's names, and
/// the plain signals as `plain` renames them (adtrail's name → theirs).
pub(crate) fn user_data(hashes: &ContactHashes, plain: &[(&str, &str)]) -> Map<String, Value> {
    let mut user = Map::new();
    let lists = [
        ("em", hashes.em.clone()),
        ("ph", hashes.ph.clone()),
        ("fn", hashes.first_name.clone().into_iter().collect()),
        ("ln", hashes.last_name.clone().into_iter().collect()),
        (
            "external_id",
            hashes.external_id.clone().into_iter().collect(),
        ),
    ];
    for (key, values) in lists {
        if !values.is_empty() {
            user.insert(key.into(), json!(values));
        }
    }
    for (ours, theirs) in plain {
        if let Some(v) = hashes.signals.get(*ours) {
            user.insert((*theirs).into(), json!(v));
        }
    }
    user
}

/// `custom_data`: currency and value (`as_text`: a decimal string, as
/// Pinterest wants it), and the order.
pub(crate) fn custom_data(c: &Conversion, as_text: bool) -> Map<String, Value> {
    let mut custom = Map::new();
    if let (Some(cents), Some(currency)) = (c.value_cents, &c.currency) {
        let value = units(cents, currency);
        custom.insert("currency".into(), json!(currency));
        custom.insert(
            "value".into(),
            if as_text {
                json!(value.to_string())
            } else {
                json!(value)
            },
        );
    }
    if let Some(order) = &c.order_id {
        custom.insert("order_id".into(), json!(order));
    }
    custom
}
