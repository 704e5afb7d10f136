//! A linked Page's forms and the host's rules: forms read at link, rules
//! checked against the form and the board, simulated over the last 30
//! days' leads, and applied to each new lead (a column, or discarded with
//! its reason), the lead's choices kept as option keys only.
use adtrail_fake_meta::{Delivery, SAMPLE_FORMS};
use adtrail_tests::*;
use serde_json::{Value, json};

use super::{LOJA_PAGE, link_loja_page, submit_on_loja};

const FORM: &str = SAMPLE_FORMS[0].0;

/// A lead on Loja X's form choosing `interesse` (a value as Meta shows it,
/// or an option key), with a name and e-mail.
async fn submit(h: &Harness, interesse: &str) -> String {
    let answers = [
        ("full_name", "Rita Confidencial"),
        ("email", "rita.confidencial@example.com"),
        ("interesse", interesse),
    ];
    submit_on_loja(h, &answers, Delivery::Once).await
}

fn rules() -> Value {
    json!({"entryColumn": "novo", "rules": [
        {"questionKey": "interesse", "answers": ["curioso"], "to": {"discard": "curious"}},
        {"questionKey": "interesse", "answers": ["comprar"], "to": {"column": "qualificado"}},
    ]})
}

async fn bad(h: &Harness, body: Value) -> String {
    let (s, b) = h
        .call(
            "PUT",
            &format!("/v1/sites/loja-x/forms/{FORM}/rules"),
            Some(body),
        )
        .await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("INVALID_ARGUMENT")),
        "{b}"
    );
    b["error"]["message"].as_str().unwrap().to_owned()
}

/// Loja X with its board and pixel, its Page linked (its form read), and
/// four leads in before any rule.
async fn loja_with_four_leads() -> Harness {
    let h = Harness::start().await;
    adtrail_tests::capi::loja_with_pixel(&h).await;
    link_loja_page(&h).await;
    let forms_path = format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms");
    let listed = h.expect(200, "GET", &forms_path, None).await;
    let form = &listed["forms"][0];
    assert_eq!(form["formId"], json!(FORM), "read when the Page was linked");
    let interesse = form["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["key"] == "interesse")
        .unwrap();
    assert_eq!(
        interesse["options"][0],
        json!({"key": "comprar", "value": "Quero comprar"})
    );
    assert_eq!(form["rules"]["configured"], json!(false));

    // Four leads before any rule: the board's default.
    for choice in ["Quero comprar", "orcamento", "curioso", "Só estou olhando"] {
        submit(&h, choice).await;
    }
    h.runner().drain().await.unwrap();

    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_are_checked_and_simulated_before_they_are_saved() {
    let h = loja_with_four_leads().await;
    // The rules are checked against the form and the board, naming the field.
    let sim = format!("/v1/sites/loja-x/forms/{FORM}/rules/simulate");
    let mut broken = rules();
    broken["rules"][1]["to"] = json!({"column": "nope"});
    assert!(bad(&h, broken).await.starts_with("rules[1].to.column"));
    let mut broken = rules();
    broken["rules"][0]["questionKey"] = json!("full_name");
    assert!(bad(&h, broken).await.starts_with("rules[0].questionKey"));
    let mut broken = rules();
    broken["rules"][0]["answers"] = json!(["curioso", "talvez"]);
    assert!(bad(&h, broken).await.starts_with("rules[0].answers[1]"));
    let mut broken = rules();
    broken["rules"][0]["to"] = json!({"column": "novo", "discard": "x"});
    assert!(bad(&h, broken).await.starts_with("rules[0].to"));
    let mut broken = rules();
    broken["entryColumn"] = json!("nope");
    assert!(bad(&h, broken).await.starts_with("entryColumn"));
    let (s, _) = h
        .call("PUT", "/v1/sites/loja-x/forms/123/rules", Some(rules()))
        .await;
    assert_eq!(s, 404, "a form the site's Pages do not have");
    let rules_path = format!("/v1/sites/loja-x/forms/{FORM}/rules");
    let none = h.expect(200, "GET", &rules_path, None).await;
    assert_eq!(none["configured"], json!(false), "nothing bad was saved");

    // A simulation over the last 30 days, saving nothing.
    let simulated = h.expect(200, "POST", &sim, Some(rules())).await;
    assert_eq!(
        simulated,
        json!({"total": 4, "entry": 1, "columns": [{"column": "novo", "leads": 1},
            {"column": "qualificado", "leads": 1}],
            "discarded": [{"reason": "curious", "leads": 2}], "rules": [2, 1], "partial": false})
    );
    assert_eq!(
        h.expect(200, "GET", &rules_path, None).await["configured"],
        json!(false)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_rules_route_each_new_lead_to_a_column_or_discard_it() {
    let started = loja_with_four_leads().await;
    let h = &started;
    let (with_contact, contact) = a_first_contact_is_checked(h).await;
    let buyer = saved_rules_decide_new_leads(h, with_contact, &contact).await;
    // The column's event reached Meta as a Conversion Lead.
    let sent = h.fake().accepted_events();
    assert_eq!(
        sent.iter()
            .map(|e| e.event_name.as_str())
            .collect::<Vec<_>>(),
        ["QualifiedLead"]
    );
    assert_eq!(
        sent[0].user_data["lead_id"],
        json!(buyer.parse::<u64>().unwrap())
    );
    the_forms_list_and_the_rules_count_30_days(h).await;
}

/// A first contact is checked, stored and handed on; adtrail sends
/// nothing. Answers the rules with a valid one, and that one.
async fn a_first_contact_is_checked(h: &Harness) -> (Value, Value) {
    let mut with_contact = rules();
    with_contact["firstContact"] = json!({"mode": "instant"});
    assert!(
        bad(h, with_contact.clone())
            .await
            .starts_with("firstContact.mode")
    );
    with_contact["firstContact"] = json!({"mode": "automatic"});
    assert!(
        bad(h, with_contact.clone())
            .await
            .starts_with("firstContact.text")
    );
    let contact = json!({"mode": "automatic", "text": "Oi! Posso ajudar?",
        "brakes": {"businessHoursOnly": true, "maxPerHour": 20, "waitMinutes": 5}});
    with_contact["firstContact"] = contact.clone();
    with_contact["whatsappButtonConfirmed"] = json!(true);
    (with_contact, contact)
}

/// Saved, with each rule's count; new leads follow them (one discarded,
/// one to a rule's column, one to the entry), each announced with its
/// decision and the first contact. Answers the buyer's leadgen id.
async fn saved_rules_decide_new_leads(h: &Harness, with_contact: Value, contact: &Value) -> String {
    let rules_path = format!("/v1/sites/loja-x/forms/{FORM}/rules");
    let saved = h.expect(200, "PUT", &rules_path, Some(with_contact)).await;
    assert_eq!(saved["firstContact"], *contact);
    assert_eq!(saved["whatsappButtonConfirmed"], json!(true));
    assert_eq!(saved["rules"][0]["count30d"], json!(2));
    assert_eq!(saved["rules"][1]["to"], json!({"column": "qualificado"}));
    let tap = h.tap_bus().await;
    let curious = submit(h, "Só estou olhando").await;
    let buyer = submit(h, "comprar").await;
    let quote = submit(h, "Só um orçamento").await;
    h.runner().drain().await.unwrap();
    let lead = |id: &str| {
        let key = format!("meta-lead:{id}");
        async move { h.store().leads().get_lead("loja-x", &key).await.unwrap() }
    };
    assert!(
        lead(&curious).await.is_none(),
        "discarded: not on the board"
    );
    assert_eq!(
        lead(&buyer).await.unwrap().column.as_deref(),
        Some("qualificado")
    );
    assert_eq!(lead(&quote).await.unwrap().column.as_deref(), Some("novo"));
    let arrived: Vec<Value> = tap
        .take(h)
        .await
        .into_iter()
        .filter(|e| e.detail_type == "FormLeadArrived")
        .map(|e| e.detail)
        .collect();
    assert!(arrived.iter().all(|e| e["firstContact"] == *contact));
    let decisions: Vec<Value> = arrived.iter().map(|e| e["decision"].clone()).collect();
    assert_eq!(
        decisions,
        [
            json!({"kind": "discard", "reason": "curious", "rule": 0}),
            json!({"kind": "column", "column": "qualificado", "rule": 1}),
            json!({"kind": "column", "column": "novo", "rule": null}),
        ]
    );
    buyer
}

/// The forms list counts the last 30 days; the rules' counts too; only
/// option keys were kept of the answers.
async fn the_forms_list_and_the_rules_count_30_days(h: &Harness) {
    let forms_path = format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms");
    let rules_path = format!("/v1/sites/loja-x/forms/{FORM}/rules");
    let listed = h.expect(200, "GET", &forms_path, None).await;
    let form = &listed["forms"][0];
    assert_eq!(form["leads30d"], json!(7));
    assert_eq!(form["daily"].as_array().unwrap().len(), 30);
    assert_eq!(form["daily"][29]["leads"], json!(7));
    assert_eq!(form["rules"]["count"], json!(2));
    assert_eq!(form["rules"]["entryColumn"], json!("novo"));
    let counted = h.expect(200, "GET", &rules_path, None).await;
    assert_eq!(counted["firstContact"]["brakes"]["maxPerHour"], json!(20));
    assert_eq!(counted["total30d"], json!(7));
    assert_eq!(
        counted["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["count30d"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [3, 2]
    );
    h.expect(200, "POST", &format!("{forms_path}/refresh"), None)
        .await;
    // Only option keys were kept of the answers.
    let table = h.table_text().await;
    assert!(!table.contains("Confidencial") && !table.contains("rita.confidencial@"));
}
