//! DynamoDB's transient failures, retried in one place. Two layers, each
//! where it is safe:
//!
//! - The SDK's own retry loop, configured for DynamoDB by
//!   [`dynamodb_retry_config`] and [`TransactionConflicts`]: throttling
//!   (`ProvisionedThroughputExceededException`, `ThrottlingException`,
//!   `RequestLimitExceeded`), `InternalServerError` and other 5xx, and a
//!   single-item write refused with `TransactionConflictException`. None
//!   of these wrote anything (a transaction's retry carries the same
//!   idempotency token, so even a lost answer is safe).
//! - [`Backoff`], for what DynamoDB answers as a success or a cancellation
//!   the SDK cannot retry: a transaction cancelled for `TransactionConflict`
//!   (sent again as a new request: it wrote nothing), and the
//!   `UnprocessedKeys`/`UnprocessedItems` of a batch. When the attempts run
//!   out the caller fails loudly ([`crate::StoreError::Incomplete`] or the
//!   service error), never drops. The same for SQS's and EventBridge's
//!   batches, whose entries may fail on the service's side inside a `200`
//!   ([`send_entries`]); what they still refuse is counted for the caller.
//!
//! Both back off with full jitter and doubling, so a busy partition is not
//! hammered in step by every Lambda at once. When nothing fails, nothing
//! here adds a request.

use std::time::Duration;

use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::CancellationReason;
use aws_smithy_runtime_api::client::interceptors::context::InterceptorContext;
use aws_smithy_runtime_api::client::retries::classifiers::{ClassifyRetry, RetryAction};
use aws_smithy_types::retry::RetryConfig;

/// Attempts of one DynamoDB request (the SDK's default is 3): DynamoDB's
/// own guidance is to retry throttling longer than other services.
pub const MAX_ATTEMPTS: u32 = 8;
const INITIAL_BACKOFF: Duration = Duration::from_millis(25);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// The DynamoDB client's retry policy: standard mode (jittered exponential
/// back-off, the retry quota), more attempts, a shorter first wait.
pub fn dynamodb_retry_config() -> RetryConfig {
    RetryConfig::standard()
        .with_max_attempts(MAX_ATTEMPTS)
        .with_initial_backoff(INITIAL_BACKOFF)
        .with_max_backoff(MAX_BACKOFF)
}

/// Marks a single-item write refused because the item is part of an
/// ongoing transaction as retryable: DynamoDB rejected it unapplied.
#[derive(Debug, Clone, Copy, Default)]
pub struct TransactionConflicts;

impl ClassifyRetry for TransactionConflicts {
    fn classify_retry(&self, ctx: &InterceptorContext) -> RetryAction {
        let Some(Err(err)) = ctx.output_or_error() else {
            return RetryAction::NoActionIndicated;
        };
        let Some(err) = err.as_operation_error() else {
            return RetryAction::NoActionIndicated;
        };
        let code = err
            .downcast_ref::<PutItemError>()
            .and_then(|e| e.code())
            .or_else(|| err.downcast_ref::<UpdateItemError>().and_then(|e| e.code()))
            .or_else(|| err.downcast_ref::<DeleteItemError>().and_then(|e| e.code()));
        if code == Some("TransactionConflictException") {
            RetryAction::transient_error()
        } else {
            RetryAction::NoActionIndicated
        }
    }

    fn name(&self) -> &'static str {
        "DynamoDB TransactionConflictException"
    }
}

/// Whether a cancelled transaction failed only for a conflict with another
/// transaction (no condition failed): then sending it again is safe.
pub fn only_conflicts(reasons: &[CancellationReason]) -> bool {
    let code = |r: &CancellationReason| r.code().unwrap_or("None").to_owned();
    reasons.iter().any(|r| code(r) == "TransactionConflict")
        && reasons
            .iter()
            .all(|r| matches!(code(r).as_str(), "None" | "TransactionConflict"))
}

/// Jittered, doubling waits for the store's own retry loops.
#[derive(Debug, Clone)]
pub struct Backoff {
    attempt: u32,
    max_attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            attempt: 1,
            max_attempts: MAX_ATTEMPTS,
        }
    }
}

/// The wait before try `attempt` (1, 2, …): "full jitter", a random part
/// of a doubling ceiling, so many callers backing off at once do not retry
/// in step.
pub fn backoff(attempt: u32) -> Duration {
    let ceiling = INITIAL_BACKOFF
        .saturating_mul(1 << attempt.min(16))
        .min(MAX_BACKOFF);
    ceiling.mul_f64(fastrand::f64())
}

impl Backoff {
    /// Waits before the next attempt; `false` when none is left.
    pub async fn wait(&mut self) -> bool {
        if self.attempt >= self.max_attempts {
            return false;
        }
        tokio::time::sleep(backoff(self.attempt)).await;
        self.attempt += 1;
        true
    }

    /// The attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }
}

/// Sends a batch's `entries` with `send`, which answers the entries that
/// failed on the service's side (to go again) and how many it refused for
/// good; those to go again are sent after a jittered back-off, up to
/// [`MAX_ATTEMPTS`] requests in all. Answers how many were refused in the
/// end. The SDK retries a request that failed, never the failed entries of
/// one that succeeded.
///
/// # Errors
/// What `send` fails with.
#[cfg(any(feature = "sqs", feature = "eventbridge"))]
pub(crate) async fn send_entries<T, F, Fut, E>(mut entries: Vec<T>, mut send: F) -> Result<usize, E>
where
    F: FnMut(Vec<T>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, usize), E>>,
{
    let mut refused = 0;
    let mut backoff = Backoff::default();
    loop {
        let (again, lost) = send(entries).await?;
        refused += lost;
        entries = again;
        if entries.is_empty() {
            return Ok(refused);
        }
        if !backoff.wait().await {
            return Ok(refused + entries.len());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(code: &str) -> CancellationReason {
        CancellationReason::builder().code(code).build()
    }

    #[test]
    fn only_a_pure_conflict_is_sent_again() {
        assert!(only_conflicts(&[
            reason("None"),
            reason("TransactionConflict")
        ]));
        assert!(!only_conflicts(&[reason("None"), reason("None")]));
        assert!(!only_conflicts(&[
            reason("ConditionalCheckFailed"),
            reason("TransactionConflict")
        ]));
        assert!(!only_conflicts(&[reason("ThrottlingError")]));
    }

    #[test]
    fn backoff_stays_under_its_doubling_ceiling() {
        for attempt in 1..20 {
            let ceiling = INITIAL_BACKOFF
                .saturating_mul(1 << attempt.min(16))
                .min(MAX_BACKOFF);
            for _ in 0..50 {
                assert!(backoff(attempt) <= ceiling);
            }
        }
        assert!(backoff(30) <= MAX_BACKOFF);
    }

    #[tokio::test]
    async fn the_backoff_gives_up_after_its_attempts() {
        let mut b = Backoff::default();
        let mut waits = 0;
        while b.wait().await {
            waits += 1;
        }
        assert_eq!(waits, MAX_ATTEMPTS - 1);
        assert_eq!(b.attempts(), MAX_ATTEMPTS);
    }
}
