//! `POST /v1/meta/leadgen {pageId, leadgenId}`: the forward door. A
//! dashboard's control plane that owns the Meta app, and so receives Meta's
//! webhooks itself, hands one form lead at a time to the stack, with a
//! token from the stack's issuer made for that lead alone (`purpose:
//! meta_leadgen`, at most ten minutes, the same Page and lead in its
//! claims). The lead then takes the webhook's path: one message on the
//! leadgen queue, the leadgen worker reading it from Meta.

use adtrail_domain::error_codes::ErrorCode;
use adtrail_domain::ids::check_meta_numeric;
use adtrail_store::queue::LeadgenMessage;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::{body_bytes, json_body};
use crate::routes::webhooks::lead_ads_on;
use crate::views::ForwardView;
use crate::{Api, json};

/// The largest forward read: two ids.
const MAX_FORWARD: usize = 4 * 1024;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ForwardBody {
    page_id: String,
    leadgen_id: String,
}

pub(crate) async fn forward_leadgen(
    api: &Api,
    caller: &Caller,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    lead_ads_on(api)?;
    if body_bytes(req).len() > MAX_FORWARD {
        return Err(ApiError::invalid(format!(
            "body is larger than {MAX_FORWARD} bytes"
        )));
    }
    let body: ForwardBody = json_body(req)?;
    check_meta_numeric("pageId", &body.page_id)?;
    check_meta_numeric("leadgenId", &body.leadgen_id)?;
    let Some(named) = &caller.forwards else {
        return Err(ApiError::forbidden(
            "this route takes only a meta_leadgen token",
        ));
    };
    if named.page_id != body.page_id || named.leadgen_id != body.leadgen_id {
        tracing::warn!(page_id = %body.page_id, "a forward whose token names another lead");
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            "the token names another Page or lead",
        ));
    }
    if api.store.pages().page_link(&body.page_id).await?.is_none() {
        tracing::info!(page_id = %body.page_id, "a forwarded lead of a Page no site links");
        return json(
            200,
            &ForwardView {
                accepted: false,
                reason: Some("PAGE_NOT_LINKED"),
            },
        );
    }
    let message = LeadgenMessage {
        page_id: body.page_id,
        leadgen_id: body.leadgen_id,
        form_id: None,
        ad_id: None,
        adgroup_id: None,
        created_time: None,
        via: "forward".into(),
    };
    if api.store.queues().enqueue_leadgen(&[message]).await? > 0 {
        return Err(ApiError::new(
            ErrorCode::StoreUnavailable,
            "the leadgen queue refused the lead; forward it again",
        ));
    }
    json(
        202,
        &ForwardView {
            accepted: true,
            reason: None,
        },
    )
}
