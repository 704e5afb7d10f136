//! `PUT|GET /v1/meta/connections/{ownerKey}`: store a Meta token for an
//! owner (validated with Meta, sealed with KMS) and read the connection back,
//! never with its token.

use adtrail_domain::OwnerKey;
use adtrail_domain::error_codes::last_error;
use adtrail_store::connections::ListedAccount;
use adtrail_store::seal::Purpose;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::input::json_body;
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConnectionBody {
    access_token: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccountView<'a> {
    ad_account_id: &'a str,
    name: &'a str,
    currency: &'a str,
    timezone: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    linked_site_id: Option<Option<&'a str>>,
}

impl<'a> AccountView<'a> {
    fn of(a: &'a ListedAccount) -> Self {
        Self {
            ad_account_id: &a.ad_account_id,
            name: &a.name,
            currency: &a.currency,
            timezone: &a.timezone,
            linked_site_id: None,
        }
    }
}

/// A token Meta could issue: printable, no spaces, bounded.
fn check_token(token: &str) -> Result<(), ApiError> {
    if token.is_empty() || token.len() > 4_096 || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "accessToken: must be 1 to 4096 printable characters without spaces",
        ));
    }
    Ok(())
}

pub(crate) async fn put_connection(
    api: &Api,
    caller: &Caller,
    req: &Request,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    let body: ConnectionBody = json_body(req)?;
    check_token(&body.access_token)?;
    let token = body.access_token;
    api.graph.me(&token).await?;
    let accounts: Vec<ListedAccount> = api
        .graph
        .ad_accounts(&token)
        .await?
        .into_iter()
        .map(|a| ListedAccount {
            ad_account_id: a.id,
            name: a.name,
            currency: a.currency,
            timezone: a.timezone,
        })
        .collect();
    let sealed = api
        .aws
        .seal(&owner, Purpose::MetaConnection, &token)
        .await?;
    drop(token);
    let now = api.clock.now_ms();
    let version = uuid::Uuid::new_v4().to_string();
    let stored = api
        .aws
        .put_connection(&owner, sealed, &version, &accounts, now)
        .await?;
    align_links(api, &owner, &stored.accounts, now).await?;
    json(
        200,
        &serde_json::json!({
            "ownerKey": owner,
            "status": stored.status.as_str(),
            "adAccounts": stored.accounts.iter().map(AccountView::of).collect::<Vec<_>>(),
        }),
    )
}

/// Lines the owner's links up with what the new token lists: a link the
/// token lists resumes if a dead token (or a missing grant) had stopped it;
/// one it does not list stops with `AD_ACCOUNT_NOT_GRANTED`.
async fn align_links(
    api: &Api,
    owner: &str,
    listed: &[ListedAccount],
    now: i64,
) -> Result<(), ApiError> {
    for (site, account) in api.aws.owner_links(owner).await? {
        let Some(link) = api.aws.get_link(&site, &account).await? else {
            continue;
        };
        if listed.iter().any(|a| a.ad_account_id == account) {
            if link.next_sync_at.is_none() {
                api.aws.resume_link(&link, now).await?;
            }
        } else {
            let error = last_error(
                "AD_ACCOUNT_NOT_GRANTED",
                "the connection's token no longer lists this ad account",
            );
            api.aws.pause_link(&site, &account, &error).await?;
        }
    }
    Ok(())
}

pub(crate) async fn get_connection(
    api: &Api,
    caller: &Caller,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, false)?;
    let Some(c) = api.aws.get_connection(&owner).await? else {
        return Err(ApiError::not_found(
            "ownerKey: no Meta connection is stored for this owner",
        ));
    };
    let ids: Vec<String> = c.accounts.iter().map(|a| a.ad_account_id.clone()).collect();
    let claims = api.aws.account_claims(&ids).await?;
    let accounts: Vec<AccountView> = c
        .accounts
        .iter()
        .map(|a| {
            let site = claims.get(&a.ad_account_id).map(String::as_str);
            AccountView {
                linked_site_id: Some(site.filter(|s| caller.may_read(s).is_ok())),
                ..AccountView::of(a)
            }
        })
        .collect();
    let outside: Vec<bool> = c
        .accounts
        .iter()
        .map(|a| {
            claims
                .get(&a.ad_account_id)
                .is_some_and(|s| caller.may_read(s).is_err())
        })
        .collect();
    let accounts: Vec<serde_json::Value> = accounts
        .into_iter()
        .zip(outside)
        .map(|(view, outside)| {
            let mut v = serde_json::to_value(view).unwrap_or_default();
            v["linkedOutsideScope"] = serde_json::Value::Bool(outside);
            v
        })
        .collect();
    json(
        200,
        &serde_json::json!({
            "ownerKey": c.owner_key,
            "status": c.status.as_str(),
            "invalidSince": c.invalid_since,
            "lastError": c.last_error,
            "createdAt": c.created_at,
            "updatedAt": c.updated_at,
            "adAccounts": accounts,
        }),
    )
}

/// The owner a path names, after the caller's rights.
pub(crate) fn resolve_owner(caller: &Caller, named: &str, write: bool) -> Result<String, ApiError> {
    let owner = caller.owner(named, write)?;
    OwnerKey::parse("ownerKey", &owner)?;
    Ok(owner)
}
