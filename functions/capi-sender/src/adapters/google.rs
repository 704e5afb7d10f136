//! Google's Data Manager API: an access token minted from the
//! destination's refresh token or service account (cached until it
//! expires), the rows'
//! conversion actions as the request's destinations, an invalid request
//! split to isolate its event. A refused refresh token stops the
//! destination.

use adtrail_domain::capi::platforms::{Refusal, judge_platform_unanswered, judge_refusal};
use adtrail_domain::capi::{Conversion, Judged, Verdict};
use adtrail_domain::destinations::Account;
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::identifiers::Platform;
use adtrail_platforms::google::{GoogleAccount, Grant};
use adtrail_platforms::{Answer, PlatformClient, google};
use futures::future::BoxFuture;

use super::Adapter;
use crate::targets::{Target, TokenOwner};

pub(crate) struct GoogleAdapter<'a> {
    pub(crate) client: &'a PlatformClient,
    pub(crate) now_ms: i64,
}

impl Adapter for GoogleAdapter<'_> {
    fn max_events(&self) -> usize {
        google::MAX_EVENTS
    }

    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (
                Account::Google {
                    operating_account,
                    login_account,
                    conversion_actions,
                    validate_only,
                },
                Some(grant),
            ) = (&target.account, Grant::of(&target.credentials))
            else {
                return Judged::All(Verdict::unexpected("not a Google target"));
            };
            // An event whose conversion action was taken off the
            // destination since it was queued cannot go; the others go
            // again at once without it.
            if rows
                .iter()
                .any(|c| !conversion_actions.contains_key(&c.event_name))
            {
                return Judged::PerEvent(
                    rows.iter()
                        .map(|c| {
                            if conversion_actions.contains_key(&c.event_name) {
                                Verdict::NotSent
                            } else {
                                Verdict::Failed(last_error(
                                    LastErrorCode::DestinationUnavailable,
                                    "the destination has no conversion action for this event",
                                ))
                            }
                        })
                        .collect(),
                );
            }
            let key = cache_key(&target.owner);
            let access = match self
                .client
                .google_access_token(&key, &grant, self.now_ms)
                .await
            {
                Ok(token) => token,
                Err((refusal, message)) => {
                    return judge_refusal(Platform::Google, refusal, &message, 1);
                }
            };
            let account = GoogleAccount {
                operating_account,
                login_account,
                conversion_actions,
                validate_only: *validate_only,
            };
            let body = google::body(&account, rows);
            let answer = self.client.google_send(&access, &body).await;
            if let Answer::Lost {
                maybe_received: true,
                message,
            } = &answer
            {
                return Judged::All(judge_platform_unanswered(Platform::Google, message));
            }
            if matches!(answer, Answer::Http { status: 401, .. }) {
                // The access token, not the destination: mint another next time.
                self.client.forget_google_token(&key);
            }
            match google::read(&answer) {
                Ok(()) => Judged::All(Verdict::Sent),
                Err((Refusal::Invalid, message)) => {
                    judge_refusal(Platform::Google, Refusal::Invalid, &message, rows.len())
                }
                Err((refusal, message)) => judge_refusal(Platform::Google, refusal, &message, 1),
            }
        })
    }
}

/// The access token cache's key: the credentials' owner and version, so
/// new credentials never use an old token.
fn cache_key(owner: &TokenOwner) -> String {
    match owner {
        TokenOwner::Destination {
            site,
            slug,
            version,
        } => format!("{site}/{slug}/{version}"),
        other => format!("{other:?}"),
    }
}
