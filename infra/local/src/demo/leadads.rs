//! The demo's Lead Ads part: Loja X links its Facebook Page, reads its
//! instant form, sets the form's rules, and three people fill the form on
//! Meta; the fake delivers each signed webhook, the leadgen worker reads
//! and routes each lead (one discarded by a rule, one into the column that
//! sends `QualifiedLead`, which goes to Meta as a Conversion Lead), and the
//! forms report counts them.

use adtrail_domain::time::DAY_MS;
use adtrail_fake_meta::{Delivery, LOJA_PAGE, SAMPLE_FORMS, Submission};
use adtrail_local::app::App;
use serde_json::json;

use super::{Client, Error};

pub(super) async fn lead_ads(app: &App, c: &Client) -> Result<(), Error> {
    use reqwest::Method;
    let Some(fake) = &app.fake else {
        return Ok(());
    };
    println!("\nLead Ads: Loja X's Facebook Page and its instant form");
    c.call(
        Method::PUT,
        &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}"),
        Some(json!({"ownerKey": "agency"})),
    )
    .await?;
    let forms = c
        .call(
            Method::GET,
            &format!("/v1/sites/loja-x/pages/{LOJA_PAGE}/forms"),
            None,
        )
        .await?;
    let form = &forms["forms"][0];
    let form_id = form["formId"].as_str().unwrap_or_default().to_owned();
    println!(
        "  Page {LOJA_PAGE} linked (the app subscribed to its leadgen field); form {} \"{}\"",
        form_id,
        form["name"].as_str().unwrap_or("")
    );
    c.call(
        Method::PUT,
        &format!("/v1/sites/loja-x/forms/{form_id}/rules"),
        Some(json!({"entryColumn": "novo", "rules": [
            {"questionKey": "interesse", "answers": ["curioso"], "to": {"discard": "just-looking"}},
            {"questionKey": "interesse", "answers": ["comprar"], "to": {"column": "qualificado"}},
        ]})),
    )
    .await?;
    println!(
        "  rules: \"Só estou olhando\" → discarded; \"Quero comprar\" → qualificado; else → novo"
    );
    submit_and_report(app, c, fake).await
}

/// Three people fill the form; what became of each, what Meta got back,
/// and the forms report.
async fn submit_and_report(
    app: &App,
    c: &Client,
    fake: &adtrail_fake_meta::FakeMeta,
) -> Result<(), Error> {
    use reqwest::Method;
    let before = fake.accepted_events().len();
    for (name, choice) in [
        ("Bruna", "Quero comprar"),
        ("Caio", "Só estou olhando"),
        ("Duda", "Só um orçamento"),
    ] {
        fake.submit_lead(Submission {
            page_id: LOJA_PAGE.into(),
            form_id: SAMPLE_FORMS[0].0.into(),
            ad_id: None,
            answers: [
                ("full_name".to_owned(), vec![format!("{name} Exemplo")]),
                ("interesse".to_owned(), vec![choice.to_owned()]),
            ]
            .into(),
            delivery: Delivery::Once,
        })
        .await?;
    }
    app.runner().drain().await?;
    let listed = c
        .call(Method::GET, "/v1/sites/loja-x/form-leads", None)
        .await?;
    for lead in listed["formLeads"].as_array().into_iter().flatten() {
        let d = &lead["decision"];
        let went = match d["kind"].as_str() {
            Some("discard") => format!("discarded ({})", d["reason"].as_str().unwrap_or("")),
            _ => format!("→ {}", d["column"].as_str().unwrap_or("the board")),
        };
        println!(
            "  form lead {}: {went}",
            lead["leadgenId"].as_str().unwrap_or("")
        );
    }
    let sent: Vec<String> = fake.accepted_events()[before..]
        .iter()
        .filter(|e| !e.user_data["lead_id"].is_null())
        .map(|e| {
            format!(
                "{} (lead_id {}, {})",
                e.event_name, e.user_data["lead_id"], e.action_source
            )
        })
        .collect();
    println!("  to Meta as Conversion Leads: {}", sent.join(", "));
    let now = app.runner().now();
    let day = now - now.rem_euclid(DAY_MS);
    let report = c
        .call(
            Method::GET,
            &format!("/v1/reports/forms?siteIds=loja-x&from={day}&to={day}"),
            None,
        )
        .await?;
    for row in report["forms"].as_array().into_iter().flatten() {
        println!(
            "  forms report, {}: {} leads, {} by no rule, columns {}, discarded {}, {} returned",
            row["name"].as_str().unwrap_or(""),
            row["leads"],
            row["entry"],
            row["columns"],
            row["discarded"],
            row["returned"]
        );
    }
    Ok(())
}
