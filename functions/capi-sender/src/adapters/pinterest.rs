//! Pinterest's Conversions API: an ad account's events with its bearer
//! token; Pinterest answers event by event, so an invalid event fails
//! alone and the processed ones are never sent again.

use adtrail_domain::capi::platforms::{judge_event, judge_platform_unanswered, judge_refusal};
use adtrail_domain::capi::{Conversion, Judged, Verdict};
use adtrail_domain::destinations::{Account, Credentials};
use adtrail_domain::identifiers::Platform;
use adtrail_platforms::{Answer, PlatformClient, pinterest};
use futures::future::BoxFuture;

use super::Adapter;
use crate::targets::Target;

pub(crate) struct PinterestAdapter<'a>(pub(crate) &'a PlatformClient);

impl Adapter for PinterestAdapter<'_> {
    fn max_events(&self) -> usize {
        pinterest::MAX_EVENTS
    }

    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (
                Account::Pinterest {
                    ad_account_id,
                    test,
                },
                Credentials::Token(token),
            ) = (&target.account, &target.credentials)
            else {
                return Judged::All(Verdict::unexpected("not a Pinterest target"));
            };
            let body = pinterest::body(rows);
            let answer = self
                .0
                .pinterest_send(token, ad_account_id, *test, &body)
                .await;
            if let Answer::Lost {
                maybe_received: true,
                message,
            } = &answer
            {
                return Judged::All(judge_platform_unanswered(Platform::Pinterest, message));
            }
            match pinterest::read(&answer, rows.len()) {
                Ok(each) => Judged::PerEvent(
                    each.iter()
                        .map(|failure| judge_event(Platform::Pinterest, failure.as_deref()))
                        .collect(),
                ),
                // A refusal of the whole request (auth, throttle, outage):
                // no event of it was processed, so none is split out.
                Err((refusal, message)) => judge_refusal(Platform::Pinterest, refusal, &message, 1),
            }
        })
    }
}
