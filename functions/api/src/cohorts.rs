//! What both reports read first for each site: the site (a report names
//! only registered sites) and its lead rollups over the range, on the
//! report's budget of rollup rows (past it the report fails rather than
//! answer short counts).

use adtrail_domain::SiteId;
use adtrail_store::rollups::RollupRow;
use adtrail_store::sites::Site;

use crate::Api;
use crate::error::ApiError;

/// The site and its rollup rows; `budget` is what the report may still
/// read.
///
/// # Errors
/// `NOT_FOUND` for an unregistered site; `REPORT_INCOMPLETE` past the
/// budget.
pub(crate) async fn site_rollups(
    api: &Api,
    id: &SiteId,
    from: i64,
    to: i64,
    budget: &mut usize,
) -> Result<(Site, Vec<RollupRow>), ApiError> {
    let Some(site) = api.store.sites().get_site(id.as_str()).await? else {
        return Err(ApiError::not_found(
            "siteIds: a requested site is not registered",
        ));
    };
    let (rows, cut) = api
        .store
        .leads()
        .rollup_rows(id.as_str(), from, to, *budget)
        .await?;
    if cut {
        return Err(ApiError::report_incomplete());
    }
    *budget -= rows.len();
    Ok((site, rows))
}
