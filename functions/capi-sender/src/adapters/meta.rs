//! Meta's Conversions API: `POST /{pixelId}/events` through the Graph
//! client, a row in Meta's wire format, Meta's answer judged by the
//! domain's Meta rules (a pixel out of reach, `events_received`, the
//! usage headers' regain time).

use adtrail_domain::capi::Verdict;
use adtrail_domain::capi::{
    Conversion, Judged, MAX_EVENTS_PER_REQUEST, judge_error, judge_receipt, judge_unanswered,
};
use adtrail_domain::destinations::{Account, Credentials};
use adtrail_domain::events::ActionSource;
use adtrail_domain::leadads::meta_lead_id;
use adtrail_domain::money::Currency;
use adtrail_meta::{CustomData, GraphClient, ServerEvent, UserData};
use futures::future::BoxFuture;

use super::Adapter;
use crate::targets::Target;

pub(crate) struct MetaAdapter<'a>(pub(crate) &'a GraphClient);

impl Adapter for MetaAdapter<'_> {
    fn max_events(&self) -> usize {
        MAX_EVENTS_PER_REQUEST
    }

    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (
                Account::Meta {
                    pixel_id,
                    test_event_code,
                },
                Credentials::Token(token),
            ) = (&target.account, &target.credentials)
            else {
                return Judged::All(Verdict::unexpected("not a Meta target"));
            };
            let events: Vec<ServerEvent> = rows.iter().map(|c| server_event(c, target)).collect();
            let n = events.len();
            match self
                .0
                .send_events(token, pixel_id, &events, test_event_code.as_deref())
                .await
            {
                Ok(received) => Judged::All(judge_receipt(received, n)),
                Err(e) if e.maybe_received => Judged::All(judge_unanswered(&e.message)),
                Err(e) => judge_error(e.kind, e.subcode, &e.message, n, e.regain_ms),
            }
        })
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

/// The name Conversion Leads events give the CRM they come from.
const LEAD_EVENT_SOURCE: &str = "adtrail";

/// A row as Meta's wire format has it. A Lead Ads lead's event goes as
/// Meta's Conversion Leads integration asks: matched on `lead_id`,
/// `action_source: system_generated`, `custom_data.event_source: crm`.
pub(crate) fn server_event(c: &Conversion, target: &Target) -> ServerEvent {
    let country = target.country_hash.clone();
    let hashes = c.hashes.clone().unwrap_or_default();
    let lead_id = meta_lead_id(&c.lead_key).and_then(|id| id.parse::<u64>().ok());
    let value = match (c.value_cents, &c.currency) {
        (Some(cents), Some(currency)) => {
            let exponent = Currency::parse(currency).map_or(2, |c| c.exponent());
            // Shortest round-trip formatting prints the decimal the cents
            // spell (459.9 for 45,990).
            Some((cents as f64 / 10f64.powi(exponent as i32), currency.clone()))
        }
        _ => None,
    };
    let custom_data =
        (value.is_some() || c.order_id.is_some() || lead_id.is_some()).then(|| CustomData {
            value: value.as_ref().map(|v| v.0),
            currency: value.map(|v| v.1),
            order_id: c.order_id.clone(),
            event_source: lead_id.map(|_| "crm"),
            lead_event_source: lead_id.map(|_| LEAD_EVENT_SOURCE),
        });
    let signal = |name: &str| hashes.signals.get(name).cloned();
    ServerEvent {
        event_name: c.event_name.as_str().to_owned(),
        event_time: c.event_time.div_euclid(1_000),
        event_id: c.event_id.clone(),
        action_source: if lead_id.is_some() {
            "system_generated"
        } else {
            meta_action_source(c.action_source.as_deref())
        },
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
            lead_id,
        },
        custom_data,
    }
}
