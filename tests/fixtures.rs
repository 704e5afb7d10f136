//! Records the tests write straight to the store, at sizes that reach
//! DynamoDB's limits.

/// A lead of a long form, made at `at` on Loja X's Page: twenty
/// questions chosen, each a long option, about 10 KB stored (a page of
/// DynamoDB's holds 100).
pub fn long_form_lead(
    form_id: &str,
    leadgen_id: String,
    at: i64,
) -> adtrail_domain::leadads::FormLeadRecord {
    use adtrail_domain::leadads::{FormDecision, FormLeadRecord};
    let choices = (0..20)
        .map(|q| {
            (
                format!("question_{q:02}"),
                vec![format!("{q:02}-{}", "o".repeat(497))],
            )
        })
        .collect();
    FormLeadRecord {
        site_id: "loja-x".into(),
        page_id: "100200300".into(),
        form_id: form_id.into(),
        leadgen_id,
        created_at: at,
        choices,
        decision: FormDecision::Column {
            column: None,
            rule: None,
        },
        origin: "lead_form".into(),
        ad_id: None,
        adset_id: None,
        campaign_id: None,
        received_at: at,
        returned: None,
    }
}
