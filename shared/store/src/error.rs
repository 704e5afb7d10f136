//! The store's one error type: what went wrong, with the SDK's error kept as
//! the cause.

use std::error::Error as StdError;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

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
        /// What failed: for DynamoDB its code and request id, for the
        /// others the SDK's error with its whole context.
        detail: String,
        /// The service was busy or unreachable through every retry (a
        /// throttle, a conflict, a 5xx, a timeout): trying later may work.
        transient: bool,
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
            transient: false,
            source: Box::new(source),
        }
    }

    /// Whether the failure is DynamoDB (or a batch of it) still busy or
    /// unreachable after every retry, rather than a fault of the request:
    /// trying again later may work.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Incomplete { .. } => true,
            Self::Service { transient, .. } => *transient,
            _ => false,
        }
    }

    /// A DynamoDB failure, said by its code and request id only: DynamoDB's
    /// messages can quote item values (a `ValidationException` repeats the
    /// value it refused), which may be contact hashes or sealed tokens, and
    /// this error reaches log lines. A failure that never reached DynamoDB
    /// (a timeout, a refused connection) keeps its whole cause.
    pub fn ddb(source: impl DdbFailure) -> Self {
        let detail = source.said();
        Self::Service {
            service: "dynamodb",
            transient: source.transient(),
            source: source.cause(&detail),
            detail,
        }
    }
}

/// A DynamoDB failure that can be said without the service's message.
pub trait DdbFailure: StdError + Send + Sync + 'static {
    /// What failed, without DynamoDB's own words.
    fn said(&self) -> String;
    /// Whether DynamoDB was busy or unreachable rather than the request
    /// at fault.
    fn transient(&self) -> bool;
    /// The cause to keep: itself, unless it quotes DynamoDB.
    fn cause(self, said: &str) -> Cause;
}

/// The cause kept in place of an answer of DynamoDB's.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Redacted(String);

impl<E, R> DdbFailure for SdkError<E, R>
where
    E: ProvideErrorMetadata + StdError + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    fn said(&self) -> String {
        match self {
            SdkError::ServiceError(e) => format!(
                "{} (request {})",
                e.err().code().unwrap_or("an unnamed error"),
                e.err().meta().extra("aws_request_id").unwrap_or("unknown"),
            ),
            SdkError::TimeoutError(_) => "timed out".into(),
            SdkError::DispatchFailure(_) => "could not be sent".into(),
            SdkError::ResponseError(_) => "answered unreadably".into(),
            _ => "could not be made".into(),
        }
    }

    fn transient(&self) -> bool {
        const BUSY: [&str; 5] = [
            "ProvisionedThroughputExceededException",
            "ThrottlingException",
            "RequestLimitExceeded",
            "InternalServerError",
            "TransactionConflictException",
        ];
        match self {
            SdkError::ServiceError(e) => match e.err().code() {
                // Cancelled only for conflicts or throttling, never for a
                // condition or a bad item: the reasons close its message.
                Some("TransactionCanceledException") => e.err().message().is_some_and(|m| {
                    m.rsplit_once('[').is_some_and(|(_, reasons)| {
                        reasons.trim_end_matches(']').split(", ").all(|r| {
                            matches!(r, "None" | "TransactionConflict" | "ThrottlingError")
                        })
                    })
                }),
                Some(code) => BUSY.contains(&code),
                None => false,
            },
            SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => true,
            _ => false,
        }
    }

    fn cause(self, said: &str) -> Cause {
        match self {
            SdkError::ServiceError(_) | SdkError::ResponseError(_) => {
                Box::new(Redacted(said.to_owned()))
            }
            other => Box::new(other),
        }
    }
}

impl DdbFailure for aws_smithy_types::error::operation::BuildError {
    fn said(&self) -> String {
        // Names a missing field, never a value.
        format!("could not be built: {self}")
    }

    fn transient(&self) -> bool {
        false
    }

    fn cause(self, _said: &str) -> Cause {
        Box::new(self)
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::Client;
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::operation::put_item::PutItemError;
    use aws_smithy_mocks::{mock, mock_client};

    use super::*;

    /// Every line an error can put in a log: its Display and its causes'.
    fn chain(e: &(dyn StdError + 'static)) -> String {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            text.push_str(&format!(" | {s} | {s:?}"));
            source = s.source();
        }
        format!("{text} | {e:?}")
    }

    #[tokio::test]
    async fn dynamodbs_words_never_reach_the_error() {
        let refused = mock!(Client::put_item).then_error(|| {
            PutItemError::generic(
                ErrorMetadata::builder()
                    .code("ValidationException")
                    .message("One or more parameter values were invalid: ph[0] 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8")
                    .build(),
            )
        });
        let client = mock_client!(aws_sdk_dynamodb, [&refused]);
        let err = client
            .put_item()
            .table_name("t")
            .send()
            .await
            .expect_err("refused");
        let err = StoreError::ddb(err);
        assert!(!err.is_transient(), "a refused item is no busy database");
        let said = chain(&err);
        assert!(said.contains("ValidationException"), "{said}");
        assert!(!said.contains("5e884898"), "{said}");
        assert!(!said.contains("parameter values"), "{said}");
    }

    #[tokio::test]
    async fn busy_through_every_retry_is_transient_and_a_condition_is_not() {
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
        let error = |code: &'static str, message: &'static str| {
            move || {
                TransactWriteItemsError::generic(
                    ErrorMetadata::builder().code(code).message(message).build(),
                )
            }
        };
        for (code, message, transient) in [
            ("ThrottlingException", "Rate exceeded", true),
            (
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]",
                true,
            ),
            (
                "TransactionCanceledException",
                "Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed, None]",
                false,
            ),
            (
                "ValidationException",
                "One or more parameter values were invalid",
                false,
            ),
        ] {
            let rule = mock!(Client::transact_write_items).then_error(error(code, message));
            let client = mock_client!(aws_sdk_dynamodb, [&rule]);
            let err = client
                .transact_write_items()
                .send()
                .await
                .expect_err("refused");
            assert_eq!(
                StoreError::ddb(err).is_transient(),
                transient,
                "{code}: {message}"
            );
        }
    }
}
