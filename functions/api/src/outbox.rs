//! The API's side of the outbox, shared by the routes that queue
//! conversions (a lead's changes, a storefront's events): whether the
//! site's pixel can take events now, and putting the rows' messages on the
//! send queue once they are written.

use adtrail_domain::pixels::{PixelReady, pixel_ready};
use adtrail_store::queue::SendMessage;

use crate::Api;
use crate::error::ApiError;

/// Whether the site can queue now, and whether new leads send `Lead`
/// (the domain's one rule; the sender asks it again before sending).
pub(crate) async fn pixel_ready_now(api: &Api, site: &str) -> Result<Option<PixelReady>, ApiError> {
    let pixel = api.store.pixels().get_pixel(site).await?;
    let connection = match pixel.as_ref().and_then(|p| p.connection_owner()) {
        Some(owner) => api
            .store
            .connections()
            .get_connection(owner)
            .await?
            .map(|c| c.status),
        None => None,
    };
    Ok(pixel_ready(pixel.as_ref(), connection).ok())
}

/// Puts send messages on the send queue. A failure here loses nothing:
/// the rows are pending, and the sweeper sends them.
pub(crate) async fn enqueue(api: &Api, messages: &[SendMessage]) {
    if messages.is_empty() {
        return;
    }
    match api.store.queues().enqueue_sends(messages).await {
        Ok(0) => {}
        Ok(refused) => tracing::warn!(refused, "SQS refused sends; the sweeper will send them"),
        Err(error) => {
            tracing::warn!(error = %error, "could not queue sends; the sweeper will send them")
        }
    }
}
