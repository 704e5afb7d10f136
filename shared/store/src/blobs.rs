//! Thumbnails in the private S3 bucket: copied once from Meta's CDN, served
//! to readers through short-lived presigned URLs, and tagged unreferenced
//! once their site is erased (the bucket's lifecycle rule expires them).

use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;

use crate::{Blobs, StoreError};

/// The tag the bucket's lifecycle rule expires thumbnails by (its key and
/// value are the template's too).
pub const UNREFERENCED_TAG: (&str, &str) = ("adtrail-unreferenced", "true");

/// The object key of an ad's thumbnail.
pub fn thumbnail_key(site: &str, ad: &str) -> String {
    format!("thumbnails/{site}/{ad}")
}

impl Blobs<'_> {
    /// Stores a thumbnail's bytes.
    ///
    /// # Errors
    /// [`StoreError::Service`] when S3 refuses or cannot be reached.
    pub async fn put_thumbnail(
        &self,
        key: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<(), StoreError> {
        self.s3
            .put_object()
            .bucket(&self.names.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .map_err(|e| StoreError::service("s3", e))?;
        Ok(())
    }

    /// A GET URL for a stored thumbnail that works for `lifetime` without
    /// credentials: the bucket stays private, and Meta's own URLs expire.
    /// Signing is local (no request to S3).
    ///
    /// # Errors
    /// [`StoreError::Service`] when the URL cannot be signed.
    pub async fn thumbnail_url(&self, key: &str, lifetime: Duration) -> Result<String, StoreError> {
        let config =
            PresigningConfig::expires_in(lifetime).map_err(|e| StoreError::service("s3", e))?;
        let signed = self
            .s3
            .get_object()
            .bucket(&self.names.bucket)
            .key(key)
            .presigned(config)
            .await
            .map_err(|e| StoreError::service("s3", e))?;
        Ok(signed.uri().to_owned())
    }

    /// Tags a thumbnail no catalog entry references any more, so the
    /// bucket's lifecycle rule expires it; one already gone is no error.
    ///
    /// # Errors
    /// [`StoreError::Service`] when S3 refuses or cannot be reached.
    pub async fn mark_unreferenced(&self, key: &str) -> Result<(), StoreError> {
        let tag = aws_sdk_s3::types::Tag::builder()
            .key(UNREFERENCED_TAG.0)
            .value(UNREFERENCED_TAG.1)
            .build()
            .map_err(|e| StoreError::service("s3", e))?;
        let tagging = aws_sdk_s3::types::Tagging::builder()
            .tag_set(tag)
            .build()
            .map_err(|e| StoreError::service("s3", e))?;
        match self
            .s3
            .put_object_tagging()
            .bucket(&self.names.bucket)
            .key(key)
            .tagging(tagging)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => Ok(()),
            Err(e) => Err(StoreError::service("s3", e)),
        }
    }

    /// The tags of a stored thumbnail, for tests.
    ///
    /// # Errors
    /// [`StoreError::Service`] when the object is missing or S3 fails.
    pub async fn thumbnail_tags(&self, key: &str) -> Result<Vec<(String, String)>, StoreError> {
        let out = self
            .s3
            .get_object_tagging()
            .bucket(&self.names.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| StoreError::service("s3", e))?;
        Ok(out
            .tag_set()
            .iter()
            .map(|t| (t.key().to_owned(), t.value().to_owned()))
            .collect())
    }

    /// The bytes of a stored thumbnail, for tests and the local runner.
    ///
    /// # Errors
    /// [`StoreError::Service`] when the object is missing or S3 fails.
    pub async fn get_thumbnail(&self, key: &str) -> Result<Vec<u8>, StoreError> {
        let out = self
            .s3
            .get_object()
            .bucket(&self.names.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| StoreError::service("s3", e))?;
        let data = out
            .body
            .collect()
            .await
            .map_err(|e| StoreError::service("s3", e))?;
        Ok(data.into_bytes().to_vec())
    }
}
