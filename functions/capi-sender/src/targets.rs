//! Where each site's events go: its pixel and the token that sends to it
//! (the connection's, or the pixel's own), resolved once per batch by the
//! domain's `pixel_ready` rule; and stopping a token's owner when Meta
//! refuses the token.

use adtrail_domain::capi::Verdict;
use adtrail_domain::contact::sha256_hex;
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::pixels::{PixelSource, pixel_ready};
use adtrail_store::seal::Purpose;
use serde_json::json;

use adtrail_store::connections::Connection;

use crate::Sender;

/// Where a site's events go and with which token.
pub(crate) struct Target {
    pub(crate) pixel_id: String,
    pub(crate) token: String,
    pub(crate) test_event_code: Option<String>,
    pub(crate) country_hash: Option<String>,
    /// Who to stop if Meta refuses the token.
    pub(crate) owner: TokenOwner,
}

/// Whose token a target sends with, at which version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TokenOwner {
    Connection { owner: String, version: String },
    Pixel { site: String, version: String },
}

impl Sender {
    /// The site's pixel and its token, or why nothing can go (the
    /// domain's [`pixel_ready`] rule, the API's too).
    pub(crate) async fn target(&self, site: &str) -> Result<Target, Verdict> {
        let store_failed = |e: adtrail_store::StoreError| {
            tracing::warn!(error = %e, "could not read the site's pixel and token");
            Verdict::unexpected("the store could not be read")
        };
        let site_row = match self.store.sites().get_site(site).await {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(Verdict::Failed(last_error(
                    LastErrorCode::PixelUnavailable,
                    "the site is gone",
                )));
            }
            Err(e) => return Err(store_failed(e)),
        };
        let pixel = self
            .store
            .pixels()
            .get_pixel(site)
            .await
            .map_err(store_failed)?;
        let connection = match pixel.as_ref().and_then(|p| p.connection_owner()) {
            Some(owner) => self
                .store
                .connections()
                .get_connection(owner)
                .await
                .map_err(store_failed)?,
            None => None,
        };
        pixel_ready(pixel.as_ref(), connection.as_ref().map(|c| c.status))
            .map_err(|why| Verdict::Failed(why.last_error()))?;
        // `pixel_ready` answered yes, so there is a pixel.
        let Some(pixel) = pixel else {
            return Err(Verdict::unexpected("the pixel is gone"));
        };
        let (token, owner) = self.open_token(site, &pixel.source, connection).await?;
        Ok(Target {
            pixel_id: pixel.pixel_id,
            token,
            test_event_code: pixel.test_event_code,
            country_hash: site_row.country.map(|c| sha256_hex(&c.to_lowercase())),
            owner,
        })
    }

    /// The token the pixel sends with, unsealed, and who owns it.
    async fn open_token(
        &self,
        site: &str,
        source: &PixelSource,
        connection: Option<Connection>,
    ) -> Result<(String, TokenOwner), Verdict> {
        let unseal_failed = |e: adtrail_store::StoreError| {
            tracing::warn!(error = %e, "could not unseal the token");
            Verdict::unexpected("the sealing key is unavailable")
        };
        let opened = match source {
            PixelSource::Connection { owner_key } => {
                let Some(connection) = connection else {
                    return Err(Verdict::unexpected("the connection is gone"));
                };
                let token = self
                    .store
                    .sealer()
                    .unseal(owner_key, Purpose::MetaConnection, &connection.sealed_token)
                    .await
                    .map_err(unseal_failed)?;
                (
                    token,
                    TokenOwner::Connection {
                        owner: owner_key.clone(),
                        version: connection.token_version,
                    },
                )
            }
            PixelSource::Token {
                sealed_token,
                token_version,
                ..
            } => {
                let token = self
                    .store
                    .sealer()
                    .unseal(&format!("pixel:{site}"), Purpose::PixelToken, sealed_token)
                    .await
                    .map_err(unseal_failed)?;
                (
                    token,
                    TokenOwner::Pixel {
                        site: site.to_owned(),
                        version: token_version.clone(),
                    },
                )
            }
        };
        Ok(opened)
    }

    /// Stops whoever owns a refused token, if it is still the stored one.
    pub(crate) async fn stop_owner(&self, owner: &TokenOwner, now: i64) {
        let error = last_error(
            LastErrorCode::MetaTokenInvalid,
            "Meta refused the token while sending conversions",
        );
        let result = match owner {
            TokenOwner::Connection { owner, version } => {
                match self
                    .store
                    .connections()
                    .stop_connection(owner, version, &error, now)
                    .await
                {
                    Ok(true) => {
                        if let Err(e) = self
                            .store
                            .bus()
                            .put_event(
                                "ConnectionTokenInvalid",
                                &json!({"ownerKey": owner, "lastError": error}),
                            )
                            .await
                        {
                            tracing::warn!(error = %e, "could not put the event on the bus");
                        }
                        Ok(())
                    }
                    Ok(false) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            TokenOwner::Pixel { site, version } => self
                .store
                .pixels()
                .stop_pixel(site, version, &error, now)
                .await
                .map(|_| ()),
        };
        if let Err(error) = result {
            tracing::warn!(error = %error, "could not stop the refused token's owner");
        }
    }
}
