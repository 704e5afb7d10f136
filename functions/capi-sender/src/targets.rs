//! Where each row goes: its site's pixel and the token that sends to it
//! (the connection's, or the pixel's own), resolved once per batch by the
//! domain's `pixel_ready` rule, or a destination of the site with its own
//! sealed credentials; and stopping a token's owner when the platform
//! refuses the token.

use adtrail_domain::capi::Verdict;
use adtrail_domain::contact::sha256_hex;
use adtrail_domain::destinations::{Account, Credentials};
use adtrail_domain::error_codes::{LastErrorCode, last_error};
use adtrail_domain::pixels::{PixelSource, pixel_ready};
use adtrail_store::seal::Purpose;
use adtrail_store::sites::Site;
use serde_json::json;

use adtrail_store::connections::Connection;

use crate::Sender;

/// Where a row goes and with which credentials.
pub(crate) struct Target {
    /// The platform's ids and test mode (the pixel's are Meta's).
    pub(crate) account: Account,
    pub(crate) credentials: Credentials,
    /// The site's country, hashed, for Meta's `country`.
    pub(crate) country_hash: Option<String>,
    /// Who to stop if the platform refuses the credentials.
    pub(crate) owner: TokenOwner,
}

impl Target {
    /// Which rows may share a request: the same account (ids and test
    /// mode) and the same credentials.
    pub(crate) fn group(&self) -> (String, TokenOwner) {
        (format!("{:?}", self.account), self.owner.clone())
    }
}

/// Whose token a target sends with, at which version.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum TokenOwner {
    Connection {
        owner: String,
        version: String,
    },
    Pixel {
        site: String,
        version: String,
    },
    Destination {
        site: String,
        slug: String,
        version: String,
    },
}

/// What a row is sent to: its site's pixel, or one of its destinations.
pub(crate) type TargetKey = (String, Option<String>);

impl Sender {
    /// The site a batch's rows belong to, read once per site per batch
    /// (`None`: it is gone).
    pub(crate) async fn read_site(&self, site: &str) -> Result<Option<Site>, Verdict> {
        self.store.sites().get_site(site).await.map_err(|e| {
            tracing::warn!(error = %e, "could not read the site");
            Verdict::unexpected("the store could not be read")
        })
    }

    /// Where a row of `site` (its row: `site_row`) for `destination`
    /// (`None`: the pixel) goes.
    pub(crate) async fn target(
        &self,
        site: &str,
        site_row: Option<&Site>,
        destination: Option<&str>,
    ) -> Result<Target, Verdict> {
        // The hashed `country` Meta matches on.
        let country_hash = site_row
            .and_then(|s| s.country.as_ref())
            .map(|c| sha256_hex(&c.to_lowercase()));
        match (destination, site_row) {
            (None, None) => Err(Verdict::Failed(last_error(
                LastErrorCode::PixelUnavailable,
                "the site is gone",
            ))),
            (None, Some(_)) => self.pixel_target(site, country_hash).await,
            (Some(slug), _) => self.destination_target(site, slug, country_hash).await,
        }
    }

    /// A destination with its own credentials, or why nothing can go to
    /// it: gone, archived, disabled, stopped, or on a platform adtrail does
    /// not send to yet.
    async fn destination_target(
        &self,
        site: &str,
        slug: &str,
        country_hash: Option<String>,
    ) -> Result<Target, Verdict> {
        let unavailable =
            |why: &str| Verdict::Failed(last_error(LastErrorCode::DestinationUnavailable, why));
        let d = match self.store.destinations().get_destination(site, slug).await {
            Ok(Some(d)) => d,
            Ok(None) => return Err(unavailable("the destination is gone")),
            Err(e) => {
                tracing::warn!(error = %e, "could not read the destination");
                return Err(Verdict::unexpected("the store could not be read"));
            }
        };
        if d.archived_at.is_some() {
            return Err(unavailable("the destination is archived"));
        }
        if !d.enabled {
            return Err(unavailable("the destination is disabled"));
        }
        if d.stopped {
            return Err(unavailable(
                "the platform refused the destination's credentials; store new ones",
            ));
        }
        if self.adapter(d.account.platform()).is_none() {
            return Err(unavailable("adtrail does not send to this platform yet"));
        }
        let opened = self
            .store
            .sealer()
            .unseal_destination(site, slug, &d.sealed_credentials)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "could not unseal the destination's credentials");
                Verdict::unexpected("the sealing key is unavailable")
            })?;
        let Some(credentials) = Credentials::from_sealed_text(&opened) else {
            return Err(Verdict::unexpected(
                "the credentials do not fit the platform",
            ));
        };
        Ok(Target {
            account: d.account,
            credentials,
            country_hash,
            owner: TokenOwner::Destination {
                site: site.to_owned(),
                slug: slug.to_owned(),
                version: d.credential_version,
            },
        })
    }

    /// The site's pixel and its token, or why nothing can go (the
    /// domain's [`pixel_ready`] rule, the API's too).
    async fn pixel_target(
        &self,
        site: &str,
        country_hash: Option<String>,
    ) -> Result<Target, Verdict> {
        let store_failed = |e: adtrail_store::StoreError| {
            tracing::warn!(error = %e, "could not read the site's pixel and token");
            Verdict::unexpected("the store could not be read")
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
            account: Account::Meta {
                pixel_id: pixel.pixel_id,
                test_event_code: pixel.test_event_code,
            },
            credentials: Credentials::Token(token),
            country_hash,
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
            TokenOwner::Destination {
                site,
                slug,
                version,
            } => {
                let error = last_error(
                    LastErrorCode::PlatformTokenInvalid,
                    "the platform refused the destination's credentials while sending conversions",
                );
                self.store
                    .destinations()
                    .stop_destination(site, slug, version, &error, now)
                    .await
                    .map(|_| ())
            }
        };
        if let Err(error) = result {
            tracing::warn!(error = %error, "could not stop the refused token's owner");
        }
    }
}
