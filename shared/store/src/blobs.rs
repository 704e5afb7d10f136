//! Thumbnails in the private S3 bucket: copied once from Meta's CDN, served
//! to readers through short-lived presigned URLs.

use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;

use crate::{Blobs, StoreError};

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
