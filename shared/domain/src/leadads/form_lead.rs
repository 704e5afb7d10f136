//! A form lead as adtrail keeps it: what Meta says of it (`GET
//! /{leadgen_id}`, read without its answers, which adtrail never stores),
//! the lead it records on the site's board, and the `FormLeadArrived`
//! event a host subscribes to.

use chrono::DateTime;

use super::{FirstContact, FormDecision};
use serde_json::{Value, json};

/// The origin of a lead an ad brought through its instant form.
pub const ORIGIN_PAID: &str = "lead_form";
/// The origin of a form lead no ad brought (the form reached organically).
pub const ORIGIN_ORGANIC: &str = "lead_form_organic";
/// What goes on the bus when a form lead is recorded.
pub const FORM_LEAD_ARRIVED: &str = "FormLeadArrived";

/// A form lead, as Meta's `GET /{leadgen_id}` describes it (ids checked,
/// names bounded), without the person's answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormLead {
    pub leadgen_id: String,
    pub form_id: Option<String>,
    pub ad_id: Option<String>,
    pub ad_name: Option<String>,
    pub adset_id: Option<String>,
    pub adset_name: Option<String>,
    pub campaign_id: Option<String>,
    pub campaign_name: Option<String>,
    /// Meta's `created_time`, epoch milliseconds.
    pub created_at: i64,
    /// Meta's `is_organic`: no ad brought it.
    pub organic: bool,
    /// Where it was submitted (`fb`, `ig`), as Meta names it.
    pub platform: Option<String>,
    /// The person's answers, held only to pick the lead's choices.
    pub answers: Answers,
}

/// A lead's answers as Meta gave them (`field_data`: a question's key and
/// its values). Held in memory to pick the options chosen
/// ([`crate::leadads::choices`]), then dropped: never stored, logged,
/// queued or put on the bus. `Debug` shows only how many there are.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Answers(pub Vec<(String, Vec<String>)>);

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Answers({} redacted)", self.0.len())
    }
}

impl FormLead {
    /// `lead_form` with its ad, or `lead_form_organic`.
    pub fn origin(&self) -> &'static str {
        if self.ad_id.is_some() && !self.organic {
            ORIGIN_PAID
        } else {
            ORIGIN_ORGANIC
        }
    }

    /// The ad that brought it, when one did.
    pub fn paid_ad(&self) -> Option<&str> {
        (self.origin() == ORIGIN_PAID)
            .then_some(self.ad_id.as_deref())
            .flatten()
    }

    /// Its key in the site's leads: one lead per `leadgen_id`, however
    /// often and by whichever door it arrives.
    pub fn lead_key(&self) -> String {
        meta_lead_key(&self.leadgen_id)
    }

    /// The change that records it: the same for every delivery, so a
    /// second one is seen as already written.
    pub fn change_id(&self) -> String {
        format!("meta-leadgen:{}", self.leadgen_id)
    }

    /// When it happened for adtrail: Meta's time, never ahead of ours.
    pub fn occurred_at(&self, now: i64) -> i64 {
        self.created_at.min(now)
    }
}

/// A form lead's key in the site's leads, from its `leadgen_id`: the
/// inverse of [`meta_lead_id`].
pub fn meta_lead_key(leadgen_id: &str) -> String {
    format!("meta-lead:{leadgen_id}")
}

/// The `leadgen_id` a form lead's key carries ([`FormLead::lead_key`]):
/// its events go to Meta as Conversion Leads, matched on it.
pub fn meta_lead_id(lead_key: &str) -> Option<&str> {
    lead_key
        .strip_prefix("meta-lead:")
        .filter(|id| !id.is_empty() && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_digit()))
}

/// Meta's `created_time` (`2015-02-28T08:49:14+0000`, an offset without a
/// colon; RFC 3339 taken too) as epoch milliseconds.
pub fn parse_created_time(text: &str) -> Option<i64> {
    DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%z")
        .or_else(|_| DateTime::parse_from_rfc3339(text))
        .ok()
        .map(|t| t.timestamp_millis())
        .filter(|ms| *ms >= 0)
}

/// The `FormLeadArrived` detail: ids, the decision, the form's first
/// contact and the origin, never an answer. `lead_id`: the board's lead,
/// unless the rules discarded it.
pub fn form_lead_arrived(
    site_id: &str,
    page_id: &str,
    lead: &FormLead,
    lead_id: Option<&str>,
    decision: &FormDecision,
    first_contact: Option<&FirstContact>,
) -> Value {
    let decision = match decision {
        FormDecision::Column { column, rule } => {
            json!({"kind": "column", "column": column, "rule": rule})
        }
        FormDecision::Discard { reason, rule } => {
            json!({"kind": "discard", "reason": reason, "rule": rule})
        }
    };
    json!({
        "siteId": site_id,
        "pageId": page_id,
        "formId": lead.form_id,
        "leadgenId": lead.leadgen_id,
        "leadKey": lead_id.map(|_| lead.lead_key()),
        "leadId": lead_id,
        "occurredAt": lead.created_at,
        "decision": decision,
        "firstContact": first_contact.map(FirstContact::to_json),
        "origin": {
            "kind": lead.origin(),
            "adId": lead.ad_id,
            "adName": lead.ad_name,
            "adsetId": lead.adset_id,
            "adsetName": lead.adset_name,
            "campaignId": lead.campaign_id,
            "campaignName": lead.campaign_name,
            "platform": lead.platform,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::check_opaque;
    use crate::leads::check_origin;

    fn lead(ad: Option<&str>, organic: bool) -> FormLead {
        FormLead {
            leadgen_id: "444444444444444".into(),
            form_id: Some("2222".into()),
            ad_id: ad.map(str::to_owned),
            ad_name: None,
            adset_id: None,
            adset_name: None,
            campaign_id: None,
            campaign_name: None,
            created_at: 1_764_547_200_000,
            organic,
            platform: Some("fb".into()),
            answers: Answers(vec![("email".into(), vec!["ana@example.com".into()])]),
        }
    }

    #[test]
    fn meta_times_parse_with_and_without_a_colon() {
        assert_eq!(
            parse_created_time("2015-02-28T08:49:14+0000"),
            Some(1_425_113_354_000)
        );
        assert_eq!(
            parse_created_time("2015-02-28T05:49:14-0300"),
            Some(1_425_113_354_000)
        );
        assert_eq!(
            parse_created_time("2015-02-28T08:49:14+00:00"),
            Some(1_425_113_354_000)
        );
        for bad in ["", "2015-02-28", "yesterday", "1969-12-31T23:59:59+0000"] {
            assert_eq!(parse_created_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_origin_is_paid_only_with_an_ad_and_not_organic() {
        let table = [
            (Some("3333"), false, ORIGIN_PAID, Some("3333")),
            (Some("3333"), true, ORIGIN_ORGANIC, None),
            (None, false, ORIGIN_ORGANIC, None),
            (None, true, ORIGIN_ORGANIC, None),
        ];
        for (ad, organic, origin, paid) in table {
            let l = lead(ad, organic);
            assert_eq!(l.origin(), origin, "{ad:?} {organic}");
            assert_eq!(l.paid_ad(), paid);
            check_origin(l.origin()).unwrap();
        }
    }

    #[test]
    fn one_key_and_change_per_leadgen_id_and_never_a_future_time() {
        let l = lead(Some("3333"), false);
        check_opaque("leadKey", &l.lead_key()).unwrap();
        check_opaque("changeId", &l.change_id()).unwrap();
        assert_eq!(l.lead_key(), lead(None, true).lead_key());
        assert_eq!(meta_lead_id(&l.lead_key()), Some("444444444444444"));
        for key in ["zu", "meta-lead:", "meta-lead:12a", "xmeta-lead:1"] {
            assert_eq!(meta_lead_id(key), None, "{key}");
        }
        assert_eq!(l.occurred_at(l.created_at + 1), l.created_at);
        assert_eq!(l.occurred_at(l.created_at - 5), l.created_at - 5);
    }

    #[test]
    fn the_event_names_ids_and_the_decision_only() {
        let l = lead(Some("3333"), false);
        let v = form_lead_arrived(
            "loja-x",
            "100200300",
            &l,
            Some("lead-1"),
            &FormDecision::Column {
                column: None,
                rule: None,
            },
            None,
        );
        assert_eq!(v["leadgenId"], "444444444444444");
        assert_eq!(v["origin"]["kind"], "lead_form");
        assert_eq!(
            v["decision"],
            json!({"kind": "column", "column": null, "rule": null})
        );
        assert!(v.get("answers").is_none() && v.get("fieldData").is_none());
        assert!(!v.to_string().contains("ana@"));
        assert!(
            !format!("{l:?}").contains("ana@"),
            "Debug hides the answers"
        );
    }
}
