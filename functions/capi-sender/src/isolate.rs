//! One request to Meta's Conversions API and what each of its events
//! became: a request Meta rejects as invalid is split in halves until the
//! invalid event stands alone (the domain's `judge_error` decides), and a
//! conversion row in Meta's wire format.

use adtrail_domain::capi::{
    Conversion, Judged, Verdict, judge_error, judge_receipt, judge_unanswered,
};
use adtrail_domain::events::ActionSource;
use adtrail_domain::money::Currency;
use adtrail_meta::{CustomData, ServerEvent, UserData};

use crate::Sender;
use crate::targets::Target;

/// Requests one group may spend isolating invalid events; what is left
/// after is tried again on the next attempt.
const MAX_SPLIT_REQUESTS: usize = 64;

impl Sender {
    /// Sends `events`; a request Meta rejects as invalid is split in halves
    /// until each invalid event stands alone. Answers a verdict per event
    /// and the number of requests made.
    pub(crate) async fn send_isolating(
        &self,
        target: &Target,
        events: &[ServerEvent],
    ) -> (Vec<Verdict>, usize) {
        let mut verdicts: Vec<Option<Verdict>> = vec![None; events.len()];
        let mut ranges = vec![(0, events.len())];
        let mut requests = 0;
        while let Some((lo, hi)) = ranges.pop() {
            if requests >= MAX_SPLIT_REQUESTS {
                for v in &mut verdicts[lo..hi] {
                    *v = Some(Verdict::unexpected(
                        "too many invalid events to isolate at once",
                    ));
                }
                continue;
            }
            requests += 1;
            let result = self
                .graph
                .send_events(
                    &target.token,
                    &target.pixel_id,
                    &events[lo..hi],
                    target.test_event_code.as_deref(),
                )
                .await;
            let verdict = match result {
                Ok(received) => judge_receipt(received, hi - lo),
                Err(e) if e.maybe_received => judge_unanswered(&e.message),
                Err(e) => match judge_error(e.kind, e.subcode, &e.message, hi - lo, e.regain_ms) {
                    Judged::All(v) => v,
                    Judged::Split => {
                        let mid = lo + (hi - lo) / 2;
                        ranges.push((mid, hi));
                        ranges.push((lo, mid));
                        continue;
                    }
                },
            };
            for v in &mut verdicts[lo..hi] {
                *v = Some(verdict.clone());
            }
        }
        (
            verdicts
                .into_iter()
                .map(|v| v.unwrap_or(Verdict::Sent))
                .collect(),
            requests,
        )
    }
}

/// Meta's `action_source` for adtrail's (a lead's change: `chat`).
fn meta_action_source(source: Option<&str>) -> &'static str {
    match source.and_then(ActionSource::parse) {
        None | Some(ActionSource::Chat) => "chat",
        Some(ActionSource::Website) => "website",
        Some(ActionSource::App) => "app",
        Some(ActionSource::Phone) => "phone_call",
        Some(ActionSource::PhysicalStore) => "physical_store",
        Some(ActionSource::SystemGenerated) => "system_generated",
        Some(ActionSource::Other) => "other",
    }
}

/// A row as Meta's wire format has it.
pub(crate) fn server_event(c: &Conversion, target: &Target) -> ServerEvent {
    let country = target.country_hash.clone();
    let hashes = c.hashes.clone().unwrap_or_default();
    let value = match (c.value_cents, &c.currency) {
        (Some(cents), Some(currency)) => {
            let exponent = Currency::parse(currency).map_or(2, |c| c.exponent());
            // Shortest round-trip formatting prints the decimal the cents
            // spell (459.9 for 45,990).
            Some((cents as f64 / 10f64.powi(exponent as i32), currency.clone()))
        }
        _ => None,
    };
    let custom_data = (value.is_some() || c.order_id.is_some()).then(|| CustomData {
        value: value.as_ref().map(|v| v.0),
        currency: value.map(|v| v.1),
        order_id: c.order_id.clone(),
    });
    let signal = |name: &str| hashes.signals.get(name).cloned();
    ServerEvent {
        event_name: c.event_name.as_str().to_owned(),
        event_time: c.event_time.div_euclid(1_000),
        event_id: c.event_id.clone(),
        action_source: meta_action_source(c.action_source.as_deref()),
        event_source_url: c.source_url.clone(),
        user_data: UserData {
            client_ip_address: signal("ip"),
            client_user_agent: signal("userAgent"),
            fbc: signal("fbc"),
            fbp: signal("fbp"),
            ctwa_clid: signal("ctwaClid"),
            em: hashes.em,
            ph: hashes.ph,
            first_name: hashes.first_name,
            last_name: hashes.last_name,
            external_id: hashes.external_id.into_iter().collect(),
            country: country.into_iter().collect(),
        },
        custom_data,
    }
}
