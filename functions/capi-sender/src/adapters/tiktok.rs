//! TikTok's Events API: the pixel's events with its `Access-Token`, whole
//! requests refused for one bad event (split, as for Meta).

use adtrail_domain::capi::platforms::{judge_platform_unanswered, judge_refusal};
use adtrail_domain::capi::{Conversion, Judged, Verdict};
use adtrail_domain::destinations::{Account, Credentials};
use adtrail_domain::identifiers::Platform;
use adtrail_platforms::{Answer, PlatformClient, tiktok};
use futures::future::BoxFuture;

use super::Adapter;
use crate::targets::Target;

pub(crate) struct TikTokAdapter<'a>(pub(crate) &'a PlatformClient);

impl Adapter for TikTokAdapter<'_> {
    fn max_events(&self) -> usize {
        tiktok::MAX_EVENTS
    }

    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (
                Account::TikTok {
                    pixel_code,
                    test_event_code,
                },
                Credentials::Token(token),
            ) = (&target.account, &target.credentials)
            else {
                return Judged::All(Verdict::unexpected("not a TikTok target"));
            };
            let body = tiktok::body(pixel_code, test_event_code.as_deref(), rows);
            let answer = self.0.tiktok_send(token, &body).await;
            if let Answer::Lost {
                maybe_received: true,
                message,
            } = &answer
            {
                return Judged::All(judge_platform_unanswered(Platform::TikTok, message));
            }
            match tiktok::read(&answer) {
                Ok(()) => Judged::All(Verdict::Sent),
                Err((refusal, message)) => {
                    judge_refusal(Platform::TikTok, refusal, &message, rows.len())
                }
            }
        })
    }
}
