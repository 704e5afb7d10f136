//! How a conditional write reads when its condition fails: not an error but
//! an answer ("the lease is gone", "already paused"). One place decides it
//! for single-item writes and for transactions.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput,
};
use aws_sdk_dynamodb::types::{
    CancellationReason, DeleteRequest, PutRequest, TransactWriteItem, WriteRequest,
};

use crate::retry::{Backoff, only_conflicts};

use crate::attr::{Item, s};
use crate::keys::{PK, SK};
use crate::{Store, StoreError};

fn cancelled_at(reasons: &[CancellationReason]) -> Option<usize> {
    reasons
        .iter()
        .position(|r| r.code().is_some_and(|c| c == "ConditionalCheckFailed"))
}

/// The index of the item that failed a cancelled transaction, if any.
pub(crate) fn transaction_failed_at(
    err: &aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError,
    >,
) -> Option<usize> {
    match err.as_service_error() {
        Some(aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(e)) => {
            cancelled_at(e.cancellation_reasons())
        }
        _ => None,
    }
}

/// The write's output, or `None` when its condition failed.
///
/// # Errors
/// [`StoreError::Service`] for any other failure.
pub(crate) fn applied<T, E, R>(result: Result<T, SdkError<E, R>>) -> Result<Option<T>, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(out) => Ok(Some(out)),
        Err(e)
            if e.as_service_error().and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(None)
        }
        Err(e) => Err(StoreError::ddb(e)),
    }
}

impl Store {
    /// An update of one item by its keys, on the stack's table.
    pub(crate) fn update_item(
        &self,
        pk: impl Into<String>,
        sk: impl Into<String>,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.ddb
            .update_item()
            .table_name(&self.names.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
    }

    /// One item by its keys, read strongly.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn read_item(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        self.read_item_as(pk, sk, true).await
    }

    /// [`Self::read_item`], strongly consistent or not (half the units,
    /// and it may miss a write of the last second).
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn read_item_as(
        &self,
        pk: String,
        sk: &str,
        consistent: bool,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .ddb
            .get_item()
            .table_name(&self.names.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(StoreError::ddb)?;
        Ok(out.item)
    }

    /// Deletes one item if it exists. Answers whether it did.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn delete_existing(&self, pk: String, sk: &str) -> Result<bool, StoreError> {
        let res = self
            .ddb
            .delete_item()
            .table_name(&self.names.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        Ok(applied(res)?.is_some())
    }

    /// Sends a transaction; one cancelled only for a conflict with another
    /// transaction (it wrote nothing) is sent again, as a new request,
    /// after a jittered wait, up to [`crate::retry::MAX_ATTEMPTS`] times.
    /// Every transaction of the store is sent here.
    pub(crate) async fn send_transaction(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<TransactWriteItemsOutput, SdkError<TransactWriteItemsError>> {
        let mut backoff = Backoff::default();
        loop {
            let result = self
                .ddb
                .transact_write_items()
                .set_transact_items(Some(items.clone()))
                .send()
                .await;
            let conflict = matches!(
                result.as_ref().map_err(SdkError::as_service_error),
                Err(Some(TransactWriteItemsError::TransactionCanceledException(e)))
                    if only_conflicts(e.cancellation_reasons())
            );
            if !conflict || !backoff.wait().await {
                return result;
            }
        }
    }

    /// Writes up to 25 requests to `table` in one `BatchWriteItem`; the
    /// items DynamoDB hands back unprocessed are written again after a
    /// jittered wait.
    ///
    /// # Errors
    /// [`StoreError::Incomplete`] when some are still unprocessed after
    /// [`crate::retry::MAX_ATTEMPTS`] requests; [`StoreError::Service`]
    /// when DynamoDB fails.
    pub(crate) async fn batch_write(
        &self,
        table: &str,
        mut requests: Vec<WriteRequest>,
    ) -> Result<(), StoreError> {
        let mut backoff = Backoff::default();
        loop {
            let out = self
                .ddb
                .batch_write_item()
                .request_items(table, requests)
                .send()
                .await
                .map_err(StoreError::ddb)?;
            requests = out
                .unprocessed_items
                .unwrap_or_default()
                .into_values()
                .flatten()
                .collect();
            if requests.is_empty() {
                return Ok(());
            }
            if !backoff.wait().await {
                return Err(StoreError::Incomplete {
                    operation: "BatchWriteItem",
                    left: requests.len(),
                });
            }
        }
    }

    /// Writes `puts` whole and deletes the items keyed `deletes` (pk, sk)
    /// on the stack's table, 25 requests a `BatchWriteItem`: a listing
    /// replaced.
    ///
    /// # Errors
    /// As [`Store::batch_write`].
    pub(crate) async fn put_and_delete(
        &self,
        puts: Vec<Item>,
        deletes: Vec<(String, String)>,
    ) -> Result<(), StoreError> {
        let mut requests = vec![];
        for item in puts {
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(StoreError::ddb)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        for (pk, sk) in deletes {
            let delete = DeleteRequest::builder()
                .key(PK, s(pk))
                .key(SK, s(sk))
                .build()
                .map_err(StoreError::ddb)?;
            requests.push(WriteRequest::builder().delete_request(delete).build());
        }
        for chunk in requests.chunks(25) {
            self.batch_write(&self.names.table, chunk.to_vec()).await?;
        }
        Ok(())
    }

    /// Runs a transaction: `Ok(None)` when it committed, `Ok(Some(i))` when
    /// item `i`'s condition failed (nothing was written), an error for any
    /// other failure. Every transaction of the store goes through here.
    ///
    /// # Errors
    /// [`StoreError::Service`] for a failure that is not a condition.
    pub(crate) async fn transact(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<Option<usize>, StoreError> {
        match self.send_transaction(items).await {
            Ok(_) => Ok(None),
            Err(e) => match transaction_failed_at(&e) {
                Some(i) => Ok(Some(i)),
                None => Err(StoreError::ddb(e)),
            },
        }
    }

    /// Runs a transaction whose first item is its lease check (a
    /// [`crate::lease::LeaseCondition`]). Answers `false`, having written
    /// nothing, when that check failed.
    ///
    /// # Errors
    /// [`StoreError::Service`] for any other failure.
    pub(crate) async fn transact_under_lease(
        &self,
        items: Vec<TransactWriteItem>,
    ) -> Result<bool, StoreError> {
        match self.transact(items).await? {
            None => Ok(true),
            Some(0) => Ok(false),
            // Another item's condition: not a lost lease, and not expected.
            Some(_) => Err(StoreError::Condition(
                "a transaction item's condition failed",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::Client;
    use aws_sdk_dynamodb::operation::transact_write_items::{
        TransactWriteItemsError, TransactWriteItemsOutput,
    };
    use aws_sdk_dynamodb::types::error::TransactionCanceledException;
    use aws_smithy_mocks::{mock, mock_client};

    use super::*;
    use crate::read::tests::store_with;

    fn cancelled(codes: &[&str]) -> TransactWriteItemsError {
        TransactWriteItemsError::TransactionCanceledException(
            TransactionCanceledException::builder()
                .set_cancellation_reasons(Some(
                    codes
                        .iter()
                        .map(|c| CancellationReason::builder().code(*c).build())
                        .collect(),
                ))
                .message("Transaction cancelled")
                .build(),
        )
    }

    /// A transaction under a lease: written; refused by its lease check
    /// (an answer, nothing written); cancelled for another reason (an
    /// error, never read as a lost lease).
    #[tokio::test]
    async fn only_the_lease_check_failing_reads_as_a_lost_lease() {
        let written = mock!(Client::transact_write_items)
            .then_output(|| TransactWriteItemsOutput::builder().build());
        let lost = mock!(Client::transact_write_items)
            .then_error(|| cancelled(&["ConditionalCheckFailed", "None"]));
        let other_row = mock!(Client::transact_write_items)
            .then_error(|| cancelled(&["None", "ConditionalCheckFailed"]));
        for (rule, want) in [
            (&written, Some(true)),
            (&lost, Some(false)),
            (&other_row, None),
        ] {
            let store = store_with(mock_client!(aws_sdk_dynamodb, [rule]));
            let got = store.transact_under_lease(vec![]).await.ok();
            assert_eq!(got, want);
        }
    }

    #[tokio::test]
    async fn a_transaction_cancelled_only_by_a_conflict_is_sent_again() {
        let passes = mock!(Client::transact_write_items)
            .sequence()
            .error(|| cancelled(&["None", "TransactionConflict"]))
            .times(2)
            .output(|| TransactWriteItemsOutput::builder().build())
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&passes]));
        assert_eq!(store.transact_under_lease(vec![]).await.ok(), Some(true));
        assert_eq!(passes.num_calls(), 3);

        let never = mock!(Client::transact_write_items)
            .sequence()
            .error(|| cancelled(&["None", "TransactionConflict"]))
            .repeatedly()
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&never]));
        assert!(
            store.transact_under_lease(vec![]).await.is_err(),
            "a conflict that never clears fails loudly"
        );
        assert_eq!(never.num_calls(), crate::retry::MAX_ATTEMPTS as usize);
    }

    fn delete(pk: &str) -> WriteRequest {
        WriteRequest::builder()
            .delete_request(
                aws_sdk_dynamodb::types::DeleteRequest::builder()
                    .key(PK, s(pk))
                    .key(SK, s("x"))
                    .build()
                    .unwrap(),
            )
            .build()
    }

    /// Items DynamoDB hands back unprocessed are written again, and never
    /// dropped: still unprocessed after every attempt, the write fails.
    #[tokio::test]
    async fn unprocessed_items_are_written_again_then_fail_loudly() {
        use aws_sdk_dynamodb::operation::batch_write_item::BatchWriteItemOutput;
        let left = || {
            BatchWriteItemOutput::builder()
                .unprocessed_items("t", vec![delete("b")])
                .build()
        };
        let second_time = mock!(Client::batch_write_item)
            .sequence()
            .output(left)
            .output(|| BatchWriteItemOutput::builder().build())
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&second_time]));
        store
            .batch_write("t", vec![delete("a"), delete("b")])
            .await
            .expect("written on the second request");
        assert_eq!(second_time.num_calls(), 2);

        let never = mock!(Client::batch_write_item)
            .sequence()
            .output(left)
            .repeatedly()
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&never]));
        match store.batch_write("t", vec![delete("a"), delete("b")]).await {
            Err(StoreError::Incomplete { operation, left }) => {
                assert_eq!((operation, left), ("BatchWriteItem", 1));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(never.num_calls(), crate::retry::MAX_ATTEMPTS as usize);
    }
}
