//! Creates the stack's resources in the AWS emulator (moto in server mode)
//! from `template.yaml`: the table with its indexes, the queues with their
//! redrive, the KMS key, the bucket and the bus. Every name carries a
//! prefix, so tests running in parallel each get their own stack.

use std::collections::BTreeMap;
use std::sync::Arc;

use adtrail_store::{Names, Store};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType,
};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::cloud::faults::Faults;
use crate::cloud::policy::Policy;
use crate::cloud::{Cloud, Resources};
use crate::template::{KeyElement, Template};

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("creating {what} in the emulator failed")]
    Create {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

fn create(
    what: &'static str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> StackError {
    move |source| StackError::Create { what, source }
}

/// A queue of the local stack.
#[derive(Debug, Clone)]
pub struct LocalQueue {
    pub logical_id: String,
    pub url: String,
    pub arn: String,
    pub visibility_timeout: i64,
    pub dead_letter_url: Option<String>,
    pub consumer: Option<(String, i64)>,
    /// How long the mapping gathers a batch (the template's
    /// `MaximumBatchingWindowInSeconds`).
    pub batching_window_ms: i64,
}

/// The resources of one local stack.
#[derive(Debug, Clone)]
pub struct LocalStack {
    /// The operator's clients: they made the stack and tests set it up with
    /// them; no role limits them and no fault reaches them.
    pub store: Store,
    pub queues: Vec<LocalQueue>,
    pub template: Template,
    /// The roles, the resources' canonical names, the DynamoDB faults and
    /// the log of every function's calls.
    pub cloud: Arc<Cloud>,
    config: aws_config::SdkConfig,
}

fn key_schema(keys: &[KeyElement]) -> Result<Vec<KeySchemaElement>, StackError> {
    keys.iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(&k.name)
                .key_type(KeyType::from(k.kind.as_str()))
                .build()
                .map_err(|e| create("a key schema")(Box::new(e)))
        })
        .collect()
}

/// The token key, the thumbnail bucket and the bus under `prefix`.
async fn create_key_bucket_bus(
    bootstrap: &Store,
    prefix: &str,
) -> Result<(String, String, String), StackError> {
    let key_id = bootstrap
        .kms
        .create_key()
        .description(format!("{prefix} tokens"))
        .send()
        .await
        .map_err(|e| create("the key")(Box::new(e)))?
        .key_metadata
        .map(|m| m.key_id)
        .unwrap_or_default();
    let bucket = format!("{prefix}-thumbnails").to_ascii_lowercase();
    bootstrap
        .s3
        .create_bucket()
        .bucket(&bucket)
        .send()
        .await
        .map_err(|e| create("the bucket")(Box::new(e)))?;
    let bus = format!("{prefix}-adtrail");
    bootstrap
        .events
        .create_event_bus()
        .name(&bus)
        .send()
        .await
        .map_err(|e| create("the bus")(Box::new(e)))?;
    Ok((key_id, bucket, bus))
}

impl LocalStack {
    /// Creates every resource under `prefix`.
    ///
    /// # Errors
    /// [`StackError`] when the emulator refuses a resource.
    pub async fn create(
        config: &aws_config::SdkConfig,
        template: Template,
        prefix: &str,
    ) -> Result<Self, StackError> {
        let bootstrap = Store::new(
            config,
            Names {
                table: String::new(),
                sync_queue_url: String::new(),
                send_queue_url: String::new(),
                bus: String::new(),
                key_id: String::new(),
                bucket: String::new(),
                meta_app_secret: None,
                leadgen_queue_url: None,
            },
        );
        let table = create_table(&bootstrap, &template, prefix).await?;
        let queues = create_queues(&bootstrap, &template, prefix).await?;
        let (key_id, bucket, bus) = create_key_bucket_bus(&bootstrap, prefix).await?;
        let consumed_by = |function: &str| {
            queues
                .iter()
                .find(|q| q.consumer.as_ref().is_some_and(|(f, _)| f == function))
                .map(|q| q.url.clone())
                .unwrap_or_default()
        };
        let sync_queue_url = consumed_by("SyncWorkerFunction");
        let send_queue_url = consumed_by("CapiSenderFunction");
        let leadgen_queue_url = queues
            .iter()
            .find(|q| q.logical_id == "LeadgenQueue")
            .map(|q| q.url.clone());
        let meta_app_secret = meta_app_secret(&bootstrap, prefix).await?;
        let names = Names {
            table,
            sync_queue_url,
            send_queue_url,
            bus,
            key_id,
            bucket,
            meta_app_secret: Some(meta_app_secret),
            leadgen_queue_url,
        };
        let cloud = Arc::new(Cloud::new(
            Policy::from_template(&template.raw),
            resources(&template, &queues, &names),
            Faults::from_env(),
        ));
        Ok(Self {
            store: bootstrap.with_names(names),
            queues,
            template,
            cloud,
            config: config.clone(),
        })
    }

    /// The clients a function of the template (`SyncWorkerFunction`) runs
    /// with: every call judged against its role, DynamoDB's faults
    /// injected when asked for.
    pub fn store_for(&self, function: &str) -> Store {
        let inner = self
            .config
            .http_client()
            .unwrap_or_else(adtrail_http::sdk::client);
        let config = self
            .config
            .to_builder()
            .http_client(self.cloud.gate(function, inner))
            .build();
        Store::counted(
            &config,
            self.store.names.clone(),
            self.store.counter.clone(),
        )
    }

    pub fn queue(&self, logical_id: &str) -> Option<&LocalQueue> {
        self.queues.iter().find(|q| q.logical_id == logical_id)
    }
}

/// The canonical name of each physical resource of the stack.
fn resources(template: &Template, queues: &[LocalQueue], names: &Names) -> Resources {
    let one = |ids: &[String], physical: &str| {
        ids.first()
            .map(|id| BTreeMap::from([(physical.to_owned(), id.clone())]))
            .unwrap_or_default()
    };
    Resources {
        tables: BTreeMap::from([(names.table.clone(), template.table_id.clone())]),
        queues: queues
            .iter()
            .map(|q| {
                let name = q.url.rsplit('/').next().unwrap_or_default().to_owned();
                (name, q.logical_id.clone())
            })
            .collect(),
        keys: one(&template.key_ids, &names.key_id),
        buses: one(&template.bus_ids, &names.bus),
        buckets: one(&template.bucket_ids, &names.bucket),
        // The template takes the Meta app's secret as this parameter.
        secrets: names
            .meta_app_secret
            .iter()
            .map(|s| (s.clone(), "MetaAppSecretArn".to_owned()))
            .collect(),
    }
}

/// The table, as the template defines it.
async fn create_table(
    bootstrap: &Store,
    template: &Template,
    prefix: &str,
) -> Result<String, StackError> {
    let table = format!("{prefix}-{}", template.table_id);
    let mut req = bootstrap
        .ddb
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest);
    for (name, kind) in &template.table.attributes {
        req = req.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::from(kind.as_str()))
                .build()
                .map_err(|e| create("an attribute")(Box::new(e)))?,
        );
    }
    req = req.set_key_schema(Some(key_schema(&template.table.keys)?));
    for index in &template.table.indexes {
        let mut projection =
            Projection::builder().projection_type(ProjectionType::from(index.projection.as_str()));
        for attr in &index.non_key {
            projection = projection.non_key_attributes(attr);
        }
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(&index.keys)?))
                .projection(projection.build())
                .build()
                .map_err(|e| create("an index")(Box::new(e)))?,
        );
    }
    req.send()
        .await
        .map_err(|e| create("the table")(Box::new(e)))?;

    Ok(table)
}

/// The queues, dead-letter queues first so the others can point at them.
async fn create_queues(
    bootstrap: &Store,
    template: &Template,
    prefix: &str,
) -> Result<Vec<LocalQueue>, StackError> {
    let mut ordered = template.queues.clone();
    ordered.sort_by_key(|q| q.redrive.is_some());
    let mut made: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut queues = vec![];
    for q in &ordered {
        let mut req = bootstrap
            .sqs
            .create_queue()
            .queue_name(format!("{prefix}-{}", q.logical_id))
            .attributes(
                QueueAttributeName::VisibilityTimeout,
                q.visibility_timeout.to_string(),
            );
        if let Some(r) = q.retention {
            req = req.attributes(QueueAttributeName::MessageRetentionPeriod, r.to_string());
        }
        let mut dead_letter_url = None;
        if let Some((dlq, max)) = &q.redrive
            && let Some((url, arn)) = made.get(dlq)
        {
            dead_letter_url = Some(url.clone());
            req = req.attributes(
                QueueAttributeName::RedrivePolicy,
                serde_json::json!({"deadLetterTargetArn": arn, "maxReceiveCount": max}).to_string(),
            );
        }
        let url = req
            .send()
            .await
            .map_err(|e| create("a queue")(Box::new(e)))?
            .queue_url
            .unwrap_or_default();
        let arn = bootstrap
            .sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .map_err(|e| create("a queue's ARN")(Box::new(e)))?
            .attributes
            .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
            .unwrap_or_default();
        made.insert(q.logical_id.clone(), (url.clone(), arn.clone()));
        queues.push(LocalQueue {
            logical_id: q.logical_id.clone(),
            url,
            arn,
            visibility_timeout: q.visibility_timeout,
            dead_letter_url,
            consumer: q.consumer.clone(),
            batching_window_ms: q.batching_window_ms,
        });
    }

    Ok(queues)
}

/// The operator's part: the Meta app's secret for Facebook Login. The fake
/// Meta's app here; `META_APP_SECRET_ID` names another (with real Meta).
async fn meta_app_secret(bootstrap: &Store, prefix: &str) -> Result<String, StackError> {
    Ok(match std::env::var("META_APP_SECRET_ID") {
        Ok(id) if !id.is_empty() => id,
        _ => {
            let name = format!("{prefix}-meta-app");
            bootstrap
                .secrets
                .create_secret()
                .name(&name)
                .secret_string(
                    serde_json::json!({
                        "appId": env_or("META_APP_ID", adtrail_fake_meta::FAKE_APP_ID),
                        "appSecret": env_or("META_APP_SECRET", adtrail_fake_meta::FAKE_APP_SECRET),
                        "webhookVerifyToken": env_or(
                            "META_WEBHOOK_VERIFY_TOKEN",
                            adtrail_fake_meta::FAKE_WEBHOOK_VERIFY_TOKEN,
                        ),
                    })
                    .to_string(),
                )
                .send()
                .await
                .map_err(|e| create("the Meta app secret")(Box::new(e)))?;
            name
        }
    })
}

/// A setting from the environment when set (a real Meta app's, with
/// `META_GRAPH_URL`), else the fake's.
fn env_or(name: &str, fake: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| fake.to_owned())
}
