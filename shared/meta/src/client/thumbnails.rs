//! Thumbnails found in Meta's answers: fetched only from Meta's CDN over
//! https (the fake's host locally), bounded in bytes and time, images only.

use super::*;

impl GraphClient {
    /// Fetches a thumbnail Meta's answer pointed at: https on Meta's CDN
    /// hosts only (and the fake's host locally), no redirects, at most 1 MiB,
    /// image types only. `None` for a URL outside those rules or a failed
    /// fetch: a thumbnail is never worth failing a run.
    pub async fn thumbnail(&self, url: &str) -> Option<Thumbnail> {
        let url = self.thumbnail_allowed(url)?;
        let timeout = adtrail_http::call_timeout(CDN_TIMEOUT, self.deadline)?;
        let resp = self.http().get(url).timeout(timeout).send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let content_type = resp
            .headers()
            .get("content-type")?
            .to_str()
            .ok()?
            .to_ascii_lowercase();
        let content_type = content_type.split(';').next()?.trim().to_owned();
        if !matches!(
            content_type.as_str(),
            "image/jpeg" | "image/png" | "image/gif" | "image/webp"
        ) {
            return None;
        }
        let bytes = read_bounded(resp, MAX_THUMBNAIL).await.ok()?;
        Some(Thumbnail {
            bytes,
            content_type,
        })
    }

    /// Whether a thumbnail URL obeys the rules; the parsed URL if so.
    pub fn thumbnail_allowed(&self, url: &str) -> Option<Url> {
        if url.len() > 2_048 {
            return None;
        }
        let url = Url::parse(url).ok()?;
        let host = url.host_str()?.to_ascii_lowercase();
        let on = |hosts: &[String]| {
            hosts
                .iter()
                .any(|h| host == *h || host.ends_with(&format!(".{h}")))
        };
        let scheme_ok = match url.scheme() {
            "https" => true,
            "http" => on(&self.config.insecure_thumbnail_hosts),
            _ => false,
        };
        (scheme_ok
            && url.username().is_empty()
            && url.password().is_none()
            && on(&self.config.thumbnail_hosts))
        .then_some(url)
    }
}
