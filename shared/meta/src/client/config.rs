//! Where the Graph API is and how long to wait for it: Meta's production
//! endpoints, or `META_GRAPH_URL` (https, or plain http on loopback only:
//! the local fake) and `META_TIMEOUT_MS`.

use std::time::Duration;

use url::Url;

/// Where Meta is and how long to wait for it.
#[derive(Debug, Clone)]
pub struct GraphConfig {
    /// `https://graph.facebook.com`, or the fake's address.
    pub base_url: Url,
    pub timeout: Duration,
    /// Hosts (and their subdomains) thumbnails may be fetched from.
    pub thumbnail_hosts: Vec<String>,
    /// Plain-HTTP hosts allowed for thumbnails: the fake's, locally; empty in
    /// production.
    pub insecure_thumbnail_hosts: Vec<String>,
}

impl GraphConfig {
    /// Meta's production endpoints.
    pub fn meta() -> Self {
        Self {
            base_url: Url::parse("https://graph.facebook.com").expect("static URL"),
            timeout: Duration::from_secs(30),
            thumbnail_hosts: vec![
                "fbcdn.net".into(),
                "facebook.com".into(),
                "fbsbx.com".into(),
                "cdninstagram.com".into(),
            ],
            insecure_thumbnail_hosts: vec![],
        }
    }

    /// Reads `META_GRAPH_URL`: https, or plain http on a loopback address
    /// only (the fake, locally), which is then also allowed to serve
    /// thumbnails. `META_TIMEOUT_MS` sets the timeout
    /// of each Graph call (default 30 s).
    ///
    /// # Errors
    /// A message when `META_GRAPH_URL` is not a URL, is not https off
    /// loopback, or `META_TIMEOUT_MS` not a number of milliseconds.
    pub fn from_env() -> Result<Self, String> {
        let mut config = Self::meta();
        if let Some(timeout) = timeout_from_env()? {
            config.timeout = timeout;
        }
        if let Ok(url) = std::env::var("META_GRAPH_URL") {
            config.base_url = graph_origin(&url)?;
            if let Some(host) = config.base_url.host_str() {
                config.thumbnail_hosts.push(host.to_owned());
                if config.base_url.scheme() == "http" {
                    config.insecure_thumbnail_hosts.push(host.to_owned());
                }
            }
        }
        Ok(config)
    }
}

/// A Graph origin: https, or plain http only on a loopback address (the
/// local stack's fake). A token never travels in the clear off the machine.
///
/// # Errors
/// A message naming `META_GRAPH_URL`.
pub fn graph_origin(text: &str) -> Result<Url, String> {
    adtrail_platforms::origin("META_GRAPH_URL", text)
}

/// `META_TIMEOUT_MS`, if set: 100 ms to 10 minutes.
///
/// # Errors
/// A message when it is not such a number.
pub fn timeout_from_env() -> Result<Option<Duration>, String> {
    match std::env::var("META_TIMEOUT_MS") {
        Err(_) => Ok(None),
        Ok(v) => v
            .parse::<u64>()
            .ok()
            .filter(|ms| (100..=600_000).contains(ms))
            .map(|ms| Some(Duration::from_millis(ms)))
            .ok_or_else(|| "META_TIMEOUT_MS must be 100 to 600000 milliseconds".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_origin_is_https_or_loopback() {
        assert!(graph_origin("https://graph.facebook.com").is_ok());
        assert!(graph_origin("http://127.0.0.1:4010").is_ok());
        assert!(graph_origin("http://localhost:4010").is_ok());
        assert!(graph_origin("http://[::1]:4010").is_ok());
        assert!(graph_origin("http://graph.facebook.com").is_err());
        assert!(graph_origin("http://10.0.0.5:4010").is_err());
        assert!(graph_origin("ftp://graph.facebook.com").is_err());
        assert!(graph_origin("not a url").is_err());
    }
}
