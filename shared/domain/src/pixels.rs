//! A site's Meta pixel (which dataset its conversions go to, with whose
//! token) and the one rule for whether it can send now. The API asks it
//! before queueing; the `capi-sender` asks it again before sending, and
//! stores its reason when the answer is no.

use crate::error_codes::{LastErrorCode, last_error};

/// Where a pixel's token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PixelSource {
    /// The owner's connection token.
    Connection { owner_key: String },
    /// A token of its own, sealed; `set_by` is the owner who set it, if any.
    Token {
        sealed_token: Vec<u8>,
        token_version: String,
        set_by: Option<String>,
    },
}

/// A site's pixel as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePixel {
    pub site_id: String,
    pub pixel_id: String,
    pub name: String,
    pub source: PixelSource,
    pub enabled: bool,
    pub send_lead_event: bool,
    pub test_event_code: Option<String>,
    pub last_error: Option<String>,
    /// Meta refused the pixel's own token: nothing is queued or sent until
    /// a token is stored again.
    pub stopped: bool,
    /// The connection's token no longer lists the pixel
    /// (`PIXEL_NOT_GRANTED`): nothing is queued or sent until it does.
    pub not_granted: bool,
    pub updated_at: i64,
}

impl SitePixel {
    pub fn source_name(&self) -> &'static str {
        match self.source {
            PixelSource::Connection { .. } => "connection",
            PixelSource::Token { .. } => "token",
        }
    }

    /// The owner who set the pixel (`None`: the host, with a token of its own).
    pub fn owner(&self) -> Option<&str> {
        match &self.source {
            PixelSource::Connection { owner_key } => Some(owner_key),
            PixelSource::Token { set_by, .. } => set_by.as_deref(),
        }
    }

    /// The connection whose token the pixel sends with, if any.
    pub fn connection_owner(&self) -> Option<&str> {
        match &self.source {
            PixelSource::Connection { owner_key } => Some(owner_key),
            PixelSource::Token { .. } => None,
        }
    }
}

/// A connection's state, as far as sending goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionStatus {
    Active,
    /// Meta refused its token.
    Invalid,
}

impl ConnectionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Invalid => "invalid",
        }
    }
}

/// A site that can send now, and whether its new leads send `Lead`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelReady {
    pub send_lead_event: bool,
}

/// Why a site cannot send now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unready {
    NoPixel,
    Off,
    NotGranted,
    /// Meta refused the pixel's own token.
    Stopped,
    ConnectionGone,
    /// Meta refused the connection's token.
    ConnectionInvalid,
}

impl Unready {
    /// The `lastError` of a conversion that cannot go for this reason.
    pub fn last_error(self) -> String {
        use LastErrorCode::{MetaTokenInvalid, PixelUnavailable};
        match self {
            Unready::NoPixel => last_error(PixelUnavailable, "the site has no pixel"),
            Unready::Off => last_error(PixelUnavailable, "the pixel is off"),
            Unready::NotGranted => last_error(
                PixelUnavailable,
                "the connection's token no longer lists the pixel (PIXEL_NOT_GRANTED)",
            ),
            Unready::Stopped => last_error(
                MetaTokenInvalid,
                "Meta refused the pixel's token; store a new one",
            ),
            Unready::ConnectionGone => {
                last_error(PixelUnavailable, "the pixel's connection is gone")
            }
            Unready::ConnectionInvalid => last_error(
                MetaTokenInvalid,
                "Meta refused the connection's token; connect again",
            ),
        }
    }
}

/// Whether a site can send now: an enabled pixel, listed by its token,
/// whose token Meta has not refused. `connection` is the status of the
/// pixel's connection (`None`: it has none, or it is gone), read only when
/// [`SitePixel::connection_owner`] names one.
pub fn pixel_ready(
    pixel: Option<&SitePixel>,
    connection: Option<ConnectionStatus>,
) -> Result<PixelReady, Unready> {
    let pixel = pixel.ok_or(Unready::NoPixel)?;
    if !pixel.enabled {
        return Err(Unready::Off);
    }
    if pixel.not_granted {
        return Err(Unready::NotGranted);
    }
    if pixel.stopped {
        return Err(Unready::Stopped);
    }
    if pixel.connection_owner().is_some() {
        match connection {
            None => return Err(Unready::ConnectionGone),
            Some(ConnectionStatus::Invalid) => return Err(Unready::ConnectionInvalid),
            Some(ConnectionStatus::Active) => {}
        }
    }
    Ok(PixelReady {
        send_lead_event: pixel.send_lead_event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pixel(source: PixelSource) -> SitePixel {
        SitePixel {
            site_id: "loja-x".into(),
            pixel_id: "1234".into(),
            name: "Loja X".into(),
            source,
            enabled: true,
            send_lead_event: true,
            test_event_code: None,
            last_error: None,
            stopped: false,
            not_granted: false,
            updated_at: 0,
        }
    }

    #[test]
    fn a_pixel_is_ready_only_when_nothing_stops_it() {
        use ConnectionStatus::*;
        let own = pixel(PixelSource::Token {
            sealed_token: vec![1],
            token_version: "v1".into(),
            set_by: None,
        });
        let shared = pixel(PixelSource::Connection {
            owner_key: "agency".into(),
        });
        let ready = Ok(PixelReady {
            send_lead_event: true,
        });
        assert_eq!(
            pixel_ready(Some(&own), None),
            ready,
            "an own token needs no connection"
        );
        assert_eq!(pixel_ready(Some(&shared), Some(Active)), ready);
        let off = SitePixel {
            enabled: false,
            ..shared.clone()
        };
        let not_granted = SitePixel {
            not_granted: true,
            ..shared.clone()
        };
        let stopped = SitePixel {
            stopped: true,
            ..own.clone()
        };
        let table = [
            (None, Some(Active), Unready::NoPixel),
            (Some(&off), Some(Active), Unready::Off),
            (Some(&not_granted), Some(Active), Unready::NotGranted),
            (Some(&stopped), None, Unready::Stopped),
            (Some(&shared), None, Unready::ConnectionGone),
            (Some(&shared), Some(Invalid), Unready::ConnectionInvalid),
        ];
        for (p, c, why) in table {
            assert_eq!(pixel_ready(p, c), Err(why), "{why:?}");
        }
        assert!(
            Unready::Stopped
                .last_error()
                .starts_with("META_TOKEN_INVALID: ")
        );
        assert!(Unready::Off.last_error().starts_with("PIXEL_UNAVAILABLE: "));
    }
}
