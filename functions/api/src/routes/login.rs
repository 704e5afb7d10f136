//! `POST /v1/meta/connections/{ownerKey}/login` `{code, redirectUri}`:
//! Facebook Login for Business. The code from Meta's login window is
//! traded for a token with the app's id and secret (from Secrets Manager);
//! its lifetime comes from the answer or, when that says nothing, from
//! `/debug_token`. A system user token never expires and is kept as it is;
//! a token with under 7 days left is traded for a long-lived one, and if
//! that trade fails the login still succeeds, with `expiringSoon` up and
//! `lastError: TOKEN_EXCHANGE_FAILED`. Then the token takes the pasted
//! token's path (`/me`, accounts, pixels, sealed with KMS).
//!
//! The code is used once, by Meta; it is never stored, logged or echoed.

use adtrail_domain::error_codes::{ErrorCode, LastErrorCode, last_error};
use adtrail_domain::graph_error::{EXPIRING_SOON_MS, LoginRefusal, classify_login};
use adtrail_meta::GraphError;
use adtrail_store::connections::Authorization;
use adtrail_store::meta_app::{MetaApp, MetaAppError};
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

use crate::auth::Caller;
use crate::auth::{require_whole_owner, resolve_owner};
use crate::connect::store_connection;
use crate::error::ApiError;
use crate::input::json_body;
use crate::views::{AuthorizedBy, LoginView, connected_view};
use crate::{Api, json};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LoginBody {
    code: String,
    redirect_uri: String,
}

/// A login code: printable, no spaces, bounded.
fn check_code(code: &str) -> Result<(), ApiError> {
    if code.is_empty() || code.len() > 2_048 || !code.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "code: must be 1 to 2048 printable characters without spaces",
        ));
    }
    Ok(())
}

/// The page Meta sent the code to: https, or http on this machine only.
fn check_redirect(uri: &str) -> Result<(), ApiError> {
    let bad = || {
        ApiError::invalid(
            "redirectUri: must be an https URL (http only on localhost) of at most 2048 characters, without credentials or fragment",
        )
    };
    if uri.len() > 2_048 {
        return Err(bad());
    }
    let url = url::Url::parse(uri).map_err(|_| bad())?;
    let local = matches!(
        url.host(),
        Some(url::Host::Domain("localhost"))
            | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
            | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
    );
    let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && local);
    if !scheme_ok
        || url.host().is_none()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.fragment().is_some()
    {
        return Err(bad());
    }
    Ok(())
}

fn unavailable(e: MetaAppError) -> ApiError {
    let message = match e {
        MetaAppError::NotConfigured => {
            "Facebook Login is not configured for this stack; connect with a pasted token"
        }
        _ => "the Meta app's id and secret could not be read; connect with a pasted token",
    };
    ApiError {
        code: ErrorCode::MetaLoginUnavailable,
        message: message.into(),
        cause: Some(Box::new(e)),
    }
}

/// A refused login step: the code, the app, or Meta itself.
fn refused(e: GraphError) -> ApiError {
    match classify_login(e.status, e.code, e.subcode) {
        LoginRefusal::Code => ApiError {
            code: ErrorCode::MetaTokenInvalid,
            message: "code: Meta refused the login code (used, expired, or issued for another redirectUri); log in again".into(),
            cause: Some(Box::new(e)),
        },
        LoginRefusal::App => ApiError {
            code: ErrorCode::MetaLoginUnavailable,
            message: "Meta refused the app's id or secret; connect with a pasted token".into(),
            cause: Some(Box::new(e)),
        },
        LoginRefusal::Meta(_) => e.into(),
    }
}

/// When a token Meta issued ends (epoch ms), or `None` if never: from the
/// answer, or from `/debug_token` when the answer said nothing.
async fn expiry(
    api: &Api,
    app: &MetaApp,
    token: &adtrail_meta::IssuedToken,
    now: i64,
) -> Result<Option<i64>, ApiError> {
    if let Some(s) = token.expires_in_s {
        return Ok(Some(now + s * 1_000));
    }
    let info = api
        .graph
        .debug_token(&app.app_id, &app.app_secret, &token.access_token)
        .await
        .map_err(refused)?;
    Ok(if info.system_user {
        None
    } else {
        info.expires_at_s.map(|s| s * 1_000)
    })
}

pub(crate) async fn login(
    api: &Api,
    caller: &Caller,
    req: &Request,
    owner: &str,
) -> Result<Response<Body>, ApiError> {
    let owner = resolve_owner(caller, owner, true)?;
    let body: LoginBody = json_body(req)?;
    check_code(&body.code)?;
    check_redirect(&body.redirect_uri)?;
    require_whole_owner(api, caller, &owner).await?;
    let app = api
        .store
        .app_secrets()
        .meta_app()
        .await
        .map_err(unavailable)?;
    let now = api.clock.now_ms();
    let issued = api
        .graph
        .trade_code(&app.app_id, &app.app_secret, &body.code, &body.redirect_uri)
        .await
        .map_err(refused)?;
    let mut expires_at = expiry(api, &app, &issued, now).await?;
    let mut token = issued.access_token.clone();
    let mut exchange_error = None;
    if expires_at.is_some_and(|at| at - now < EXPIRING_SOON_MS) {
        match api
            .graph
            .long_lived(&app.app_id, &app.app_secret, &token)
            .await
        {
            Ok(long) => {
                expires_at = expiry(api, &app, &long, now).await?;
                token = long.access_token;
            }
            Err(e) => {
                // The login stands with the token that came; the screen
                // asks for a new login in time. Nothing of Meta's answer.
                tracing::warn!(kind = ?e.kind, code = ?e.code, "Meta did not trade the token for a long-lived one");
                exchange_error = Some(last_error(
                    LastErrorCode::TokenExchangeFailed,
                    "Meta did not trade the token for a long-lived one; log in again before it expires",
                ));
            }
        }
    }
    let expiring_soon = expires_at.is_some_and(|at| at - now < EXPIRING_SOON_MS);
    let (stored, me) = store_connection(api, &owner, token).await?;
    api.store
        .connections()
        .set_authorization(
            &owner,
            &Authorization {
                by: Some((&me.id, &me.name)),
                at: now,
                expires_at,
                expiring_soon,
                last_error: exchange_error.as_deref(),
            },
        )
        .await?;
    let mut view = connected_view(&stored);
    view.login = Some(LoginView {
        authorized_by: AuthorizedBy {
            id: &me.id,
            name: &me.name,
        },
        authorized_at: now,
        expires_at,
        expiring_soon,
        last_error: exchange_error.as_deref(),
    });
    json(200, &view)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_is_https_or_local_http() {
        for ok in [
            "https://app.example.com/meta/retorno",
            "http://localhost:5173/meta/retorno",
            "http://127.0.0.1/cb",
            "http://[::1]:8080/cb",
        ] {
            assert!(check_redirect(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://app.example.com/cb",
            "http://localhost.evil.com/cb",
            "https://user:pw@app.example.com/cb",
            "https://app.example.com/cb#x",
            "javascript:alert(1)",
            "/relative",
            "",
        ] {
            assert!(check_redirect(bad).is_err(), "{bad}");
        }
    }
}
