//! A Lead Ads lead's decision: matched at Meta on its lead id, its events
//! need no contact data, and its first `Lead` is Meta's own.

use super::tests::{NOW, board, ctx, events, known, recorded, update};
use super::*;
use crate::capi::EventName;

#[test]
fn a_form_leads_events_need_no_contact_and_its_first_lead_is_metas_own() {
    let b = board();
    let new = NewLead {
        origin: "lead_form".into(),
        ad_id: Some("123".into()),
        form_id: None,
        label: None,
    };
    let input = LeadInput::New {
        lead_id: "lead-f".into(),
        lead_key: "meta-lead:444444444444444",
        lead: &new,
    };
    let first = decide(
        &ctx(&b, true),
        input,
        &update(NOW - 5, None, None, Some("novo"), false),
    )
    .unwrap();
    assert_eq!(events(&first), vec![], "no Lead: Meta made the lead");
    let mut lead = first.lead;
    lead.version = 1;
    // Into a mapped column and won, without any contact data: Schedule and
    // Purchase go, matched on the lead id.
    let moved = decide(
        &ctx(&b, true),
        known(&lead),
        &update(NOW, Some(Stage::Won), Some(9_900), Some("agendado"), false),
    )
    .unwrap();
    assert_eq!(
        events(&moved),
        vec![EventName::Schedule, EventName::Purchase]
    );
    assert!(moved.conversions.iter().all(|c| c.hashes.is_empty()));
    // Without a pixel that can send, nothing is queued.
    let none = decide(
        &ctx(&b, false),
        known(&lead),
        &update(NOW, None, None, Some("agendado"), false),
    )
    .unwrap();
    assert!(none.conversions.is_empty());
    // Any other lead without contact data queues nothing.
    let other = recorded(&b);
    let plain = decide(
        &ctx(&b, true),
        known(&other),
        &update(NOW, None, None, Some("agendado"), false),
    )
    .unwrap();
    assert!(plain.conversions.is_empty());
}

#[test]
fn a_lead_ads_lead_is_a_form_lead_and_every_other_a_chat() {
    use crate::leads::Channel;
    let mut lead = recorded(&board());
    lead.lead_key = crate::leadads::meta_lead_key("444000000000001");
    assert_eq!(lead.channel(), Channel::Form);
    for key in ["ana", "meta-lead:", "meta-lead:12a", "lead:444000000000001"] {
        lead.lead_key = key.into();
        assert_eq!(lead.channel(), Channel::Chat, "{key}");
    }
}
