//! Seals secrets with KMS before they touch DynamoDB: Meta tokens, and each
//! destination's credentials. The encryption context names whose secret it
//! is (the owner; for a destination its site and slug) and the purpose, so
//! a sealed secret copied to another item (or used for another purpose)
//! does not open.

use aws_sdk_kms::primitives::Blob;

use crate::{Sealer, StoreError};

/// What a sealed secret is for: part of its encryption context.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    /// A connection's Meta token, read by the sync and the pixel sends.
    MetaConnection,
    /// A pixel's own Conversions API token.
    PixelToken,
    /// A destination's credentials (any platform's), bound to its site
    /// and slug.
    DestinationCredentials,
    /// A Facebook Page's token, bound to its owner and Page.
    PageToken,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Self::MetaConnection => "meta-connection-token",
            Self::PixelToken => "meta-pixel-token",
            Self::DestinationCredentials => "destination-credentials",
            Self::PageToken => "meta-page-token",
        }
    }
}

impl Sealer<'_> {
    /// Encrypts `secret` under the stack's key, bound to `owner` and `purpose`.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses or cannot be reached.
    pub async fn seal(
        &self,
        owner: &str,
        purpose: Purpose,
        secret: &str,
    ) -> Result<Vec<u8>, StoreError> {
        self.encrypt(&[("owner", owner)], purpose, secret).await
    }

    /// Decrypts what [`Sealer::seal`] sealed for the same owner and purpose.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses (a wrong context, a
    /// disabled key) or cannot be reached.
    pub async fn unseal(
        &self,
        owner: &str,
        purpose: Purpose,
        sealed: &[u8],
    ) -> Result<String, StoreError> {
        self.decrypt(&[("owner", owner)], purpose, sealed).await
    }

    /// Encrypts a Page's token, bound to its owner and Page.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses or cannot be reached.
    pub async fn seal_page(
        &self,
        owner: &str,
        page: &str,
        token: &str,
    ) -> Result<Vec<u8>, StoreError> {
        let context = [("owner", owner), ("page", page)];
        self.encrypt(&context, Purpose::PageToken, token).await
    }

    /// Decrypts what [`Sealer::seal_page`] sealed for the same owner and
    /// Page.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses or cannot be reached.
    pub async fn unseal_page(
        &self,
        owner: &str,
        page: &str,
        sealed: &[u8],
    ) -> Result<String, StoreError> {
        let context = [("owner", owner), ("page", page)];
        self.decrypt(&context, Purpose::PageToken, sealed).await
    }

    /// Encrypts a destination's credentials, bound to its site and slug.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses or cannot be reached.
    pub async fn seal_destination(
        &self,
        site: &str,
        slug: &str,
        secret: &str,
    ) -> Result<Vec<u8>, StoreError> {
        let context = [("site", site), ("slug", slug)];
        self.encrypt(&context, Purpose::DestinationCredentials, secret)
            .await
    }

    /// Decrypts what [`Sealer::seal_destination`] sealed for the same site
    /// and slug.
    ///
    /// # Errors
    /// [`StoreError::SealingKey`] when KMS refuses or cannot be reached.
    pub async fn unseal_destination(
        &self,
        site: &str,
        slug: &str,
        sealed: &[u8],
    ) -> Result<String, StoreError> {
        let context = [("site", site), ("slug", slug)];
        self.decrypt(&context, Purpose::DestinationCredentials, sealed)
            .await
    }

    async fn encrypt(
        &self,
        context: &[(&str, &str)],
        purpose: Purpose,
        secret: &str,
    ) -> Result<Vec<u8>, StoreError> {
        let mut request = self
            .kms
            .encrypt()
            .key_id(&self.names.key_id)
            .plaintext(Blob::new(secret.as_bytes()))
            .encryption_context("purpose", purpose.as_str());
        for (k, v) in context {
            request = request.encryption_context(*k, *v);
        }
        let out = request
            .send()
            .await
            .map_err(|e| StoreError::SealingKey(Box::new(e)))?;
        out.ciphertext_blob
            .map(Blob::into_inner)
            .ok_or_else(|| StoreError::Malformed("KMS answered no ciphertext".into()))
    }

    async fn decrypt(
        &self,
        context: &[(&str, &str)],
        purpose: Purpose,
        sealed: &[u8],
    ) -> Result<String, StoreError> {
        let mut request = self
            .kms
            .decrypt()
            .key_id(&self.names.key_id)
            .ciphertext_blob(Blob::new(sealed))
            .encryption_context("purpose", purpose.as_str());
        for (k, v) in context {
            request = request.encryption_context(*k, *v);
        }
        let out = request
            .send()
            .await
            .map_err(|e| StoreError::SealingKey(Box::new(e)))?;
        let plain = out
            .plaintext
            .ok_or_else(|| StoreError::Malformed("KMS answered no plaintext".into()))?;
        String::from_utf8(plain.into_inner())
            .map_err(|_| StoreError::Malformed("sealed secret is not text".into()))
    }
}
