//! Snap's Conversions API: a pixel's events with its token (in the query,
//! as Snap requires), the validate endpoint in test mode, an invalid
//! request split to isolate its event.

use adtrail_domain::capi::platforms::{judge_platform_unanswered, judge_refusal};
use adtrail_domain::capi::{Conversion, Judged, Verdict};
use adtrail_domain::destinations::{Account, Credentials};
use adtrail_domain::identifiers::Platform;
use adtrail_platforms::{Answer, PlatformClient, snap};
use futures::future::BoxFuture;

use super::Adapter;
use crate::targets::Target;

pub(crate) struct SnapAdapter<'a>(pub(crate) &'a PlatformClient);

impl Adapter for SnapAdapter<'_> {
    fn max_events(&self) -> usize {
        snap::MAX_EVENTS
    }

    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged> {
        Box::pin(async move {
            let (Account::Snap { pixel_id, validate }, Credentials::Token(token)) =
                (&target.account, &target.credentials)
            else {
                return Judged::All(Verdict::unexpected("not a Snap target"));
            };
            let body = snap::body(rows);
            let answer = self.0.snap_send(token, pixel_id, *validate, &body).await;
            if let Answer::Lost {
                maybe_received: true,
                message,
            } = &answer
            {
                return Judged::All(judge_platform_unanswered(Platform::Snap, message));
            }
            match snap::read(&answer) {
                Ok(()) => Judged::All(Verdict::Sent),
                Err((refusal, message)) => {
                    judge_refusal(Platform::Snap, refusal, &message, rows.len())
                }
            }
        })
    }
}
