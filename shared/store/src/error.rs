//! The store's one error type: what went wrong, with the SDK's error kept as
//! the cause.

use std::error::Error as StdError;

type Cause = Box<dyn StdError + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write found the item not as expected (a lease lost, an
    /// account claimed by another site, a limit reached).
    #[error("condition failed: {0}")]
    Condition(&'static str),
    /// KMS refused to seal or unseal, or could not be reached.
    #[error("the sealing key is unavailable")]
    SealingKey(#[source] Cause),
    /// DynamoDB left part of a batch unprocessed after every retry: the
    /// read or write did not happen whole, and nothing is dropped silently.
    #[error("{operation} left {left} keys unprocessed after every retry")]
    Incomplete {
        operation: &'static str,
        left: usize,
    },
    /// A stored item could not be read back.
    #[error("stored item is malformed: {0}")]
    Malformed(String),
    /// The service failed or could not be reached.
    #[error("{service} request failed: {detail}")]
    Service {
        service: &'static str,
        /// The SDK's error with its whole context (code, message, request id).
        detail: String,
        #[source]
        source: Cause,
    },
}

impl StoreError {
    pub fn service(service: &'static str, source: impl StdError + Send + Sync + 'static) -> Self {
        let detail = aws_smithy_types::error::display::DisplayErrorContext(&source).to_string();
        Self::Service {
            service,
            detail,
            source: Box::new(source),
        }
    }
    pub fn ddb(source: impl StdError + Send + Sync + 'static) -> Self {
        Self::service("dynamodb", source)
    }
}
