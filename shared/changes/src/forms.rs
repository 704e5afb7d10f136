//! Reading a linked Page's instant forms from Meta and keeping them: at
//! link and refresh (the API), at a new form's first lead (the leadgen
//! worker), and when a reconciliation finds none kept (the sweeper).

use adtrail_domain::leadads::LeadForm;
use adtrail_meta::{GraphClient, GraphError};
use adtrail_store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum FormsError {
    #[error("Meta refused the forms' read")]
    Graph(#[from] GraphError),
    #[error("the store failed")]
    Store(#[from] StoreError),
}

/// Reads the Page's forms with its token and stores them as the forms the
/// Page has on `site` (a form Meta no longer lists leaves).
///
/// # Errors
/// [`FormsError`]: Meta's refusal, or the store's failure.
pub async fn read_page_forms(
    store: &Store,
    graph: &GraphClient,
    site: &str,
    page: &str,
    token: &str,
    now: i64,
) -> Result<Vec<LeadForm>, FormsError> {
    let mut forms = graph.leadgen_forms(token, page).await?;
    for f in &mut forms {
        f.synced_at = now;
    }
    store.forms().replace_page_forms(site, page, &forms).await?;
    Ok(forms)
}
