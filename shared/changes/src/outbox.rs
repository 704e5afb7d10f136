//! Where a site's events go now (its pixel, its destinations), and putting
//! the rows' messages on the send queue once they are written. Shared by
//! everything that queues conversions: lead changes (the API's and the Lead
//! Ads worker's) and a storefront's events.

use adtrail_domain::destinations::{Destination, SENDING_PLATFORMS};
use adtrail_domain::pixels::{PixelReady, pixel_ready};
use adtrail_store::queue::SendMessage;
use adtrail_store::{Store, StoreError};

/// Where a site's events go now.
pub struct Targets {
    /// Whether the pixel can take events now (the domain's one rule; the
    /// sender asks it again before sending).
    pub pixel: Option<PixelReady>,
    /// Whether a new lead sends `Lead`: the pixel's setting, yes without
    /// a pixel.
    pub send_lead_event: bool,
    /// The destinations that take events on a platform adtrail sends to.
    pub destinations: Vec<Destination>,
}

/// Reads the site's pixel (then its connection) and, meanwhile, its
/// destinations: two round trips to DynamoDB on the request's path, not
/// three.
///
/// # Errors
/// [`StoreError`] when a read fails.
pub async fn targets(store: &Store, site: &str) -> Result<Targets, StoreError> {
    let destinations = store.destinations();
    let ((pixel, send_lead_event), destinations) = futures::try_join!(
        pixel_ready_now(store, site),
        destinations.list_destinations(site)
    )?;
    let destinations = destinations
        .into_iter()
        .filter(|d| d.takes_events() && SENDING_PLATFORMS.contains(&d.account.platform()))
        .collect();
    Ok(Targets {
        pixel,
        send_lead_event,
        destinations,
    })
}

/// Whether the site's pixel can send now, and its `sendLeadEvent`.
async fn pixel_ready_now(
    store: &Store,
    site: &str,
) -> Result<(Option<PixelReady>, bool), StoreError> {
    let pixel = store.pixels().get_pixel(site).await?;
    let send_lead_event = pixel.as_ref().is_none_or(|p| p.send_lead_event);
    let connection = match pixel.as_ref().and_then(|p| p.connection_owner()) {
        Some(owner) => store
            .connections()
            .get_connection(owner)
            .await?
            .map(|c| c.status),
        None => None,
    };
    Ok((
        pixel_ready(pixel.as_ref(), connection).ok(),
        send_lead_event,
    ))
}

/// Puts send messages on the send queue. A failure here loses nothing:
/// the rows are pending, and the sweeper sends them.
pub async fn enqueue(store: &Store, messages: &[SendMessage]) {
    if messages.is_empty() {
        return;
    }
    match store.queues().enqueue_sends(messages).await {
        Ok(0) => {}
        Ok(refused) => tracing::warn!(refused, "SQS refused sends; the sweeper will send them"),
        Err(error) => {
            tracing::warn!(error = %error, "could not queue sends; the sweeper will send them")
        }
    }
}
