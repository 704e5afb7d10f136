//! The Pages an owner's token lists, each with its own token sealed: the
//! listing replaced whole at each connect, login or refresh (a Page the
//! token no longer lists leaves, its token with it), read with one query.

use adtrail_domain::leadads::OwnerPage;
use aws_sdk_dynamodb::types::{DeleteRequest, PutRequest, WriteRequest};

use crate::attr::s;
use crate::items::{PageItem, decode, encode};
use crate::keys::{PK, SK, page_pk};
use crate::{Pages, StoreError};

/// Pages an owner's listing reads at most.
const MAX_LISTED: i32 = 1_000;

impl Pages<'_> {
    /// The owner's listed Pages, by id.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn list_pages(&self, owner: &str) -> Result<Vec<OwnerPage>, StoreError> {
        let query = self
            .ddb
            .query()
            .table_name(&self.names.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(page_pk(owner)))
            .consistent_read(true)
            .limit(MAX_LISTED);
        let mut found = vec![];
        self.query_pages(query, 1, |items| {
            for item in items {
                found.push(decode::<PageItem>(item, "page")?.into());
            }
            Ok(true)
        })
        .await?;
        Ok(found)
    }

    /// Stores `listed` as the owner's Pages: each written whole, and the
    /// Pages stored before that `listed` lacks deleted.
    ///
    /// # Errors
    /// [`StoreError::Service`] when DynamoDB fails.
    pub async fn replace_pages(&self, owner: &str, listed: &[OwnerPage]) -> Result<(), StoreError> {
        let before = self.list_pages(owner).await?;
        let mut requests = vec![];
        for p in listed {
            let item = encode(&PageItem::of(p, page_pk(owner)), "page")?;
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(StoreError::ddb)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        for gone in before
            .iter()
            .filter(|b| !listed.iter().any(|p| p.page_id == b.page_id))
        {
            let delete = DeleteRequest::builder()
                .key(PK, s(page_pk(owner)))
                .key(SK, s(&gone.page_id))
                .build()
                .map_err(StoreError::ddb)?;
            requests.push(WriteRequest::builder().delete_request(delete).build());
        }
        for chunk in requests.chunks(25) {
            self.batch_write(&self.names.table, chunk.to_vec()).await?;
        }
        Ok(())
    }
}
