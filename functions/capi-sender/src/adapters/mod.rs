//! One adapter per platform behind one trait: what differs between the
//! platforms (endpoint, authentication, wire format, events per request,
//! how an answer reads) lives here; the claims, leases, retries and hash
//! erasure around them are the sender's, the same for all.

mod google;
mod meta;
mod pinterest;
mod snap;
mod tiktok;

use adtrail_domain::capi::{Conversion, Judged};
use adtrail_domain::identifiers::Platform;
use futures::future::BoxFuture;

use crate::Sender;
use crate::targets::Target;

pub(crate) use google::GoogleAdapter;
pub(crate) use meta::MetaAdapter;
pub(crate) use pinterest::PinterestAdapter;
pub(crate) use snap::SnapAdapter;
pub(crate) use tiktok::TikTokAdapter;

/// A platform's conversion API, as the sender uses it.
pub(crate) trait Adapter: Send + Sync {
    /// The most events one request carries.
    fn max_events(&self) -> usize;
    /// Sends one request of `rows` to `target`; the answer as the domain
    /// judges it.
    fn send<'a>(&'a self, target: &'a Target, rows: &'a [&'a Conversion]) -> BoxFuture<'a, Judged>;
}

impl Sender {
    /// The adapter of `platform` (`None` would be a platform adtrail does
    /// not send to yet).
    pub(crate) fn adapter(&self, platform: Platform) -> Option<Box<dyn Adapter + '_>> {
        match platform {
            Platform::Meta => Some(Box::new(MetaAdapter(&self.graph))),
            Platform::TikTok => Some(Box::new(TikTokAdapter(&self.platforms))),
            Platform::Pinterest => Some(Box::new(PinterestAdapter(&self.platforms))),
            Platform::Snap => Some(Box::new(SnapAdapter(&self.platforms))),
            Platform::Google => Some(Box::new(GoogleAdapter {
                client: &self.platforms,
                now_ms: self.clock.now_ms(),
            })),
        }
    }
}
