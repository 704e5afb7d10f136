//! The two ways the store reads many items, each written once: a query
//! paged to its end or to a cap ([`Store::query_pages`], pages of at most
//! 1 MB; [`Store::query_all`] for every item), and items by key in
//! batches ([`Store::batch_read`]), whose unprocessed keys are asked again
//! with jittered back-off and, if DynamoDB still leaves some, fail the read
//! loudly ([`StoreError::Incomplete`]) rather than drop them.

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::KeysAndAttributes;

use crate::attr::{Item, s};
use crate::keys::{PK, SK};
use crate::retry::Backoff;
use crate::{Store, StoreError};

/// Keys one `BatchGetItem` takes.
const BATCH_KEYS: usize = 100;

impl Store {
    /// Runs `query` page by page, at most `max_pages`, handing each page's
    /// items to `visit`, which answers whether to go on (a visitor that
    /// stops at a cap records that itself) or fails the read.
    ///
    /// A page holds at most the query's `Limit` items and at most 1 MB:
    /// DynamoDB ends a page early at 1 MB read, whatever the `Limit`. So
    /// `max_pages` bounds the data a read may cost; a read of a number of
    /// items passes `usize::MAX` and stops in its visitor, never assuming
    /// that a page of `Limit` items is full.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn query_pages(
        &self,
        query: QueryFluentBuilder,
        max_pages: usize,
        mut visit: impl FnMut(&[Item]) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let mut pages = query.into_paginator().send();
        for _ in 0..max_pages {
            let Some(page) = pages.next().await else {
                break;
            };
            let out = page.map_err(StoreError::ddb)?;
            let more = out.last_evaluated_key.is_some();
            if !visit(out.items())? || !more {
                break;
            }
        }
        Ok(())
    }

    /// Every item `query` matches, page after page: for reads bounded by
    /// what they ask for (a range of days of a site's counters), which a
    /// single page would cut at 1 MB.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn query_all(
        &self,
        query: QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        let mut all = vec![];
        self.query_pages(query, usize::MAX, |items| {
            all.extend_from_slice(items);
            Ok(true)
        })
        .await?;
        Ok(all)
    }

    /// Items by their keys, strongly read: BatchGet, 100 keys a request.
    /// Keys DynamoDB leaves unprocessed are asked again after a jittered,
    /// doubling wait, [`crate::retry::MAX_ATTEMPTS`] requests at most a chunk.
    ///
    /// # Errors
    /// [`StoreError::Incomplete`] when keys are still unprocessed after
    /// that; [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn batch_read(
        &self,
        keys: Vec<(String, String)>,
    ) -> Result<Vec<Item>, StoreError> {
        self.batch_read_as(keys, true).await
    }

    /// [`Self::batch_read`], strongly read or not (`consistent`): an
    /// eventually consistent read costs half the read units, and may miss
    /// a write of the last second.
    pub(crate) async fn batch_read_as(
        &self,
        keys: Vec<(String, String)>,
        consistent: bool,
    ) -> Result<Vec<Item>, StoreError> {
        let mut found = vec![];
        for chunk in keys.chunks(BATCH_KEYS) {
            let mut pending: Vec<Item> = chunk
                .iter()
                .map(|(pk, sk)| [(PK.to_owned(), s(pk)), (SK.to_owned(), s(sk))].into())
                .collect();
            let mut backoff = Backoff::default();
            loop {
                let out = self
                    .ddb
                    .batch_get_item()
                    .request_items(
                        &self.names.table,
                        KeysAndAttributes::builder()
                            .set_keys(Some(pending))
                            .consistent_read(consistent)
                            .build()
                            .map_err(StoreError::ddb)?,
                    )
                    .send()
                    .await
                    .map_err(StoreError::ddb)?;
                found.extend(out.responses.unwrap_or_default().into_values().flatten());
                pending = out
                    .unprocessed_keys
                    .unwrap_or_default()
                    .into_values()
                    .flat_map(|k| k.keys)
                    .collect();
                if pending.is_empty() || !backoff.wait().await {
                    break;
                }
            }
            if !pending.is_empty() {
                return Err(StoreError::Incomplete {
                    operation: "BatchGetItem",
                    left: pending.len(),
                });
            }
        }
        Ok(found)
    }
}

impl Store {
    /// One shard of the work index: the keys (and `workAt`) of the items
    /// due by `until` (all of them without it), at most `limit`.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub(crate) async fn work_shard(
        &self,
        shard: String,
        until: Option<i64>,
        limit: i32,
    ) -> Result<Vec<Item>, StoreError> {
        let mut query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .index_name(crate::keys::WORK_INDEX)
            .expression_attribute_values(":shard", s(shard))
            .limit(limit);
        query = match until {
            Some(at) => query
                .key_condition_expression("workShard = :shard AND workAt <= :until")
                .expression_attribute_values(":until", crate::attr::n(at)),
            None => query.key_condition_expression("workShard = :shard"),
        };
        let out = query.send().await.map_err(StoreError::ddb)?;
        Ok(out.items().to_vec())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use aws_sdk_dynamodb::Client;
    use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput;
    use aws_smithy_mocks::{mock, mock_client};

    use super::*;
    use crate::Names;

    /// The store with a DynamoDB client that answers from `rules` (the
    /// other clients are real but never called).
    /// An SDK configuration that reaches nothing, for clients built
    /// without a server.
    pub(crate) fn sdk_config() -> aws_config::SdkConfig {
        aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build()
    }

    /// Names of a table `t` and nothing else.
    pub(crate) fn names() -> Names {
        Names {
            table: "t".into(),
            sync_queue_url: String::new(),
            send_queue_url: String::new(),
            bus: String::new(),
            key_id: String::new(),
            bucket: String::new(),
            meta_app_secret: None,
            leadgen_queue_url: None,
        }
    }

    pub(crate) fn store_with(ddb: Client) -> Store {
        Store {
            ddb,
            ..Store::new(&sdk_config(), names())
        }
    }

    fn key(pk: &str) -> Item {
        [(PK.to_owned(), s(pk)), (SK.to_owned(), s("x"))].into()
    }

    fn answer(found: &[&str], left: &[&str]) -> BatchGetItemOutput {
        let mut out =
            BatchGetItemOutput::builder().responses("t", found.iter().map(|pk| key(pk)).collect());
        if !left.is_empty() {
            out = out.unprocessed_keys(
                "t",
                KeysAndAttributes::builder()
                    .set_keys(Some(left.iter().map(|pk| key(pk)).collect()))
                    .build()
                    .unwrap(),
            );
        }
        out.build()
    }

    #[tokio::test]
    async fn unprocessed_keys_are_asked_again_until_every_item_is_read() {
        let rule = mock!(Client::batch_get_item)
            .sequence()
            .output(|| answer(&["a"], &["b", "c"]))
            .output(|| answer(&["b"], &["c"]))
            .output(|| answer(&["c"], &[]))
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&rule]));
        let keys = ["a", "b", "c"]
            .map(|k| (k.to_owned(), "x".to_owned()))
            .to_vec();
        let items = store.batch_read(keys).await.expect("every key read");
        let mut read: Vec<_> = items
            .iter()
            .filter_map(|i| i.get(PK)?.as_s().ok())
            .collect();
        read.sort();
        assert_eq!(read, ["a", "b", "c"]);
        assert_eq!(rule.num_calls(), 3);
    }

    #[tokio::test]
    async fn keys_left_unprocessed_after_every_try_fail_the_read_loudly() {
        let rule = mock!(Client::batch_get_item)
            .sequence()
            .output(|| answer(&["a"], &["b"]))
            .repeatedly()
            .build();
        let store = store_with(mock_client!(aws_sdk_dynamodb, [&rule]));
        let keys = ["a", "b"].map(|k| (k.to_owned(), "x".to_owned())).to_vec();
        match store.batch_read(keys).await {
            Err(StoreError::Incomplete { operation, left }) => {
                assert_eq!((operation, left), ("BatchGetItem", 1));
            }
            other => panic!("a partial read must fail, got {other:?}"),
        }
        assert_eq!(rule.num_calls(), crate::retry::MAX_ATTEMPTS as usize);
    }
}
