//! Seals Meta tokens with KMS before they touch DynamoDB. The encryption
//! context names the owner and the purpose, so a sealed token copied to
//! another owner's item (or used for another purpose) does not open.

use aws_sdk_kms::primitives::Blob;

use crate::{Sealer, StoreError};

/// What a sealed secret is for: part of its encryption context.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    /// A connection's Meta token, read by the sync and the pixel sends.
    MetaConnection,
    /// A pixel's own Conversions API token.
    PixelToken,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Self::MetaConnection => "meta-connection-token",
            Self::PixelToken => "meta-pixel-token",
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
        let out = self
            .kms
            .encrypt()
            .key_id(&self.names.key_id)
            .plaintext(Blob::new(secret.as_bytes()))
            .encryption_context("owner", owner)
            .encryption_context("purpose", purpose.as_str())
            .send()
            .await
            .map_err(|e| StoreError::SealingKey(Box::new(e)))?;
        out.ciphertext_blob
            .map(Blob::into_inner)
            .ok_or_else(|| StoreError::Malformed("KMS answered no ciphertext".into()))
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
        let out = self
            .kms
            .decrypt()
            .key_id(&self.names.key_id)
            .ciphertext_blob(Blob::new(sealed))
            .encryption_context("owner", owner)
            .encryption_context("purpose", purpose.as_str())
            .send()
            .await
            .map_err(|e| StoreError::SealingKey(Box::new(e)))?;
        let plain = out
            .plaintext
            .ok_or_else(|| StoreError::Malformed("KMS answered no plaintext".into()))?;
        String::from_utf8(plain.into_inner())
            .map_err(|_| StoreError::Malformed("sealed token is not text".into()))
    }
}
