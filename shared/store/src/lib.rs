//! The AWS adapters of adtrail: the DynamoDB store (one table, its key
//! layout in [`keys`]), the KMS seal for Meta tokens, the SQS queues, the
//! EventBridge bus and the S3 thumbnail bucket.
//!
//! Every type here speaks the domain's words (`Site`, `SiteAdAccount`,
//! `SpendRow`) so the handlers never see an `AttributeValue`. Each SDK error
//! is kept as the cause of a [`StoreError`], never flattened to a string.

pub mod attr;
#[cfg(feature = "s3")]
pub mod blobs;
pub mod board;
#[cfg(feature = "eventbridge")]
pub mod bus;
mod cadence;
pub mod catalog;
pub mod connections;
pub mod conversions;
pub mod counter;
pub mod destinations;
pub mod erase;
pub mod error;
pub mod form_counts;
pub mod forms;
mod items;
pub mod keys;
pub mod leads;
pub mod lease;
pub mod linking;
pub mod links;
pub mod logging;
#[cfg(feature = "secretsmanager")]
pub mod meta_app;
pub mod outbox;
pub mod pages;
pub mod pixels;
pub mod posted;
pub mod purge;
pub mod queue;
mod read;
mod receipts;
pub mod recovery;
pub mod retry;
pub mod rollups;
pub mod sdk;
#[cfg(feature = "kms")]
pub mod seal;
pub mod sending;
pub mod sites;
pub mod slots;
pub mod spend;
mod tally;
pub mod telemetry;
mod write;

use aws_smithy_runtime_api::client::interceptors::SharedInterceptor;
pub use cadence::{quiet_interval_from_env, sync_interval_from_env};
pub use counter::RequestCounter;
pub use error::StoreError;

/// The names of the stack's resources, read once from the environment.
#[derive(Debug, Clone)]
pub struct Names {
    pub table: String,
    pub sync_queue_url: String,
    /// The conversions' send queue.
    pub send_queue_url: String,
    /// Meta's form leads, as webhooks announce them (`LEADGEN_QUEUE_URL`;
    /// `None` in a function that does not use it).
    pub leadgen_queue_url: Option<String>,
    pub bus: String,
    pub key_id: String,
    pub bucket: String,
    /// The Secrets Manager secret holding the Meta app's id and secret, for
    /// Facebook Login; `None` turns the login off.
    pub meta_app_secret: Option<String>,
}

impl Names {
    /// Reads `TABLE_NAME`, `SYNC_QUEUE_URL`, `SEND_QUEUE_URL`, `BUS_NAME`,
    /// `KEY_ID` and `THUMBNAIL_BUCKET`; `META_APP_SECRET_ID` and
    /// `LEADGEN_QUEUE_URL` when set and not empty.
    ///
    /// # Errors
    /// The name of the first variable that is missing.
    pub fn from_env() -> Result<Self, String> {
        let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
        Ok(Self {
            table: var("TABLE_NAME")?,
            sync_queue_url: var("SYNC_QUEUE_URL")?,
            send_queue_url: var("SEND_QUEUE_URL")?,
            bus: var("BUS_NAME")?,
            key_id: var("KEY_ID")?,
            bucket: var("THUMBNAIL_BUCKET")?,
            meta_app_secret: std::env::var("META_APP_SECRET_ID")
                .ok()
                .filter(|v| !v.is_empty()),
            leadgen_queue_url: std::env::var("LEADGEN_QUEUE_URL")
                .ok()
                .filter(|v| !v.is_empty()),
        })
    }
}

/// The SDK clients and the names they act on, one of each per process.
///
/// DynamoDB's client, which every invocation of every function calls, is
/// built with the store; each other one at its first use ([`Lazy`]), so a
/// request that never reaches a service does not pay for its client.
#[derive(Debug, Clone)]
pub struct Store {
    pub ddb: aws_sdk_dynamodb::Client,
    #[cfg(feature = "sqs")]
    pub sqs: Lazy<aws_sdk_sqs::Client>,
    #[cfg(feature = "kms")]
    pub kms: Lazy<aws_sdk_kms::Client>,
    #[cfg(feature = "eventbridge")]
    pub events: Lazy<aws_sdk_eventbridge::Client>,
    #[cfg(feature = "s3")]
    pub s3: Lazy<aws_sdk_s3::Client>,
    #[cfg(feature = "secretsmanager")]
    pub secrets: Lazy<aws_sdk_secretsmanager::Client>,
    pub names: Names,
    /// Counts the requests each service received (for `make bench`).
    pub counter: RequestCounter,
}

/// Declares the store's handles: each borrows the clients and names the
/// part of the system a call site uses (`store.links().lease_link(..)`),
/// which is also what its IAM policy must grant.
macro_rules! handles {
    ($($(#[$doc:meta])* $handle:ident => $accessor:ident;)*) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $handle<'a>(&'a Store);

            $(#[$doc])*
            impl std::ops::Deref for $handle<'_> {
                type Target = Store;
                fn deref(&self) -> &Store {
                    self.0
                }
            }
        )*

        impl Store {
            $(
                $(#[$doc])*
                pub fn $accessor(&self) -> $handle<'_> {
                    $handle(self)
                }
            )*
        }
    };
}

handles! {
    /// Sites (`sites.rs`).
    Sites => sites;
    /// Links between sites and ad accounts: reads (`links.rs`), linking and
    /// unlinking (`linking.rs`), the sync runs' leases (`lease.rs`) and the
    /// dispatcher's walk of the slots (`slots.rs`).
    Links => links;
    /// Spend rows and site-day sums (`spend.rs`), and purges (`purge.rs`).
    Spend => spend;
    /// The ad catalog (`catalog.rs`).
    Catalog => catalog;
    /// Owners' Meta connections (`connections.rs`).
    Connections => connections;
    /// Sites' pixels (`pixels.rs`).
    Pixels => pixels;
    /// Sites' destinations on every ad platform (`destinations.rs`).
    Destinations => destinations;
    /// The Facebook Pages owners' tokens list (`pages.rs`).
    Pages => pages;
    /// Lead Ads forms, their rules and their leads' decisions (`forms.rs`).
    Forms => forms;
    /// Boards and event maps (`board.rs`).
    Boards => boards;
    /// Leads (`leads.rs`), the outbox (`outbox.rs`) and the rollups
    /// (`rollups.rs`).
    Leads => leads;
    /// Conversions: reads and counters (`conversions.rs`), posted events
    /// (`posted.rs`), send attempts (`sending.rs`), lost sends
    /// (`recovery.rs`).
    Conversions => conversions;
    /// The SQS queues (`queue.rs`).
    #[cfg(feature = "sqs")]
    Queues => queues;
    /// The EventBridge bus (`bus.rs`).
    #[cfg(feature = "eventbridge")]
    Bus => bus;
    /// The KMS key that seals tokens (`seal.rs`).
    #[cfg(feature = "kms")]
    Sealer => sealer;
    /// The S3 thumbnail bucket (`blobs.rs`).
    #[cfg(feature = "s3")]
    Blobs => blobs;
    /// The Meta app's secret in Secrets Manager (`meta_app.rs`).
    #[cfg(feature = "secretsmanager")]
    AppSecrets => app_secrets;
}

/// An SDK client built at its first use, then shared by every clone.
///
/// Building a client is no I/O, but it is not free: each SDK crate parses
/// its table of AWS partitions and compiles their region patterns when its
/// first client is made, about 0.7 M instructions a crate, most of a
/// function's init time when it built all its clients at start (the API's
/// six were 4.4 M of its 6.8 M instructions to the first runtime call).
#[derive(Clone)]
pub struct Lazy<C> {
    client: std::sync::Arc<std::sync::OnceLock<C>>,
    build: std::sync::Arc<dyn Fn() -> C + Send + Sync>,
}

impl<C> Lazy<C> {
    /// A client `build` makes at its first use.
    pub fn new(build: impl Fn() -> C + Send + Sync + 'static) -> Self {
        Self {
            client: std::sync::Arc::default(),
            build: std::sync::Arc::new(build),
        }
    }
}

/// A client built already (the tests hand the store one of their own).
impl<C: Send + Sync + 'static> From<C> for Lazy<C> {
    fn from(client: C) -> Self {
        let built = std::sync::OnceLock::new();
        let _ = built.set(client);
        Self {
            client: std::sync::Arc::new(built),
            build: std::sync::Arc::new(|| unreachable!("the client was handed in built")),
        }
    }
}

impl<C> std::ops::Deref for Lazy<C> {
    type Target = C;
    fn deref(&self) -> &C {
        self.client.get_or_init(|| (self.build)())
    }
}

impl<C: std::fmt::Debug> std::fmt::Debug for Lazy<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.client.get() {
            Some(client) => client.fmt(f),
            None => f.write_str("Lazy(not built yet)"),
        }
    }
}

impl Store {
    /// The clients the crate's features name, from one SDK configuration:
    /// DynamoDB's now, the others at their first use. S3 uses path-style
    /// addresses when an endpoint is overridden (moto locally). Nothing is
    /// counted: a function in Lambda does not pay for the bench's counter
    /// (which reads every request and answer).
    pub fn new(config: &aws_config::SdkConfig, names: Names) -> Self {
        Self::build(config, names, None)
    }

    /// The same, counting into `counter` (the local stack's functions share
    /// one, so the benchmarks count every function's requests).
    pub fn counted(config: &aws_config::SdkConfig, names: Names, counter: RequestCounter) -> Self {
        Self::build(config, names, Some(counter))
    }

    fn build(
        config: &aws_config::SdkConfig,
        names: Names,
        counter: Option<RequestCounter>,
    ) -> Self {
        // A client's interceptors: the counter's for its service, if any.
        let counting = |service: &'static str| -> Vec<SharedInterceptor> {
            counter
                .iter()
                .map(|c| SharedInterceptor::new(c.for_service(service)))
                .collect()
        };
        let mut ddb = aws_sdk_dynamodb::config::Builder::from(config)
            .retry_config(retry::dynamodb_retry_config())
            .retry_classifier(retry::TransactionConflicts);
        ddb.set_interceptors(counting("dynamodb"));
        // Each lazy client's recipe: its crate's builder from the shared
        // configuration, counted under the service's name.
        #[cfg_attr(
            not(any(
                feature = "sqs",
                feature = "kms",
                feature = "eventbridge",
                feature = "s3",
                feature = "secretsmanager"
            )),
            allow(unused_macros, reason = "built with no lazy client")
        )]
        macro_rules! lazy {
            ($sdk:ident, $service:literal $(, $setting:ident($value:expr))*) => {{
                let (config, interceptors) = (config.clone(), counting($service));
                Lazy::new(move || {
                    let mut builder = $sdk::config::Builder::from(&config)
                        $(.$setting($value))*;
                    builder.set_interceptors(interceptors.clone());
                    $sdk::Client::from_conf(builder.build())
                })
            }};
        }
        #[cfg(feature = "s3")]
        let path_style = config.endpoint_url().is_some();
        Self {
            ddb: aws_sdk_dynamodb::Client::from_conf(ddb.build()),
            #[cfg(feature = "sqs")]
            sqs: lazy!(aws_sdk_sqs, "sqs"),
            #[cfg(feature = "kms")]
            kms: lazy!(aws_sdk_kms, "kms"),
            #[cfg(feature = "eventbridge")]
            events: lazy!(aws_sdk_eventbridge, "eventbridge"),
            #[cfg(feature = "s3")]
            s3: lazy!(aws_sdk_s3, "s3", force_path_style(path_style)),
            #[cfg(feature = "secretsmanager")]
            secrets: lazy!(aws_sdk_secretsmanager, "secretsmanager"),
            names,
            counter: counter.unwrap_or_default(),
        }
    }

    /// The same clients acting on other resources (tests give each their own).
    pub fn with_names(&self, names: Names) -> Self {
        Self {
            names,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn a_lazy_client_is_built_at_its_first_use_once_for_every_clone() {
        let built = Arc::new(AtomicUsize::new(0));
        let counting = Arc::clone(&built);
        let lazy = Lazy::new(move || counting.fetch_add(1, Ordering::SeqCst) + 100);
        let clone = lazy.clone();
        assert_eq!(built.load(Ordering::SeqCst), 0, "nothing built before use");
        assert_eq!(format!("{lazy:?}"), "Lazy(not built yet)");
        assert_eq!(*clone, 100);
        assert_eq!(*lazy, 100);
        assert_eq!(built.load(Ordering::SeqCst), 1);
        assert_eq!(*Lazy::from(7), 7);
    }

    /// A function's store reads no request for the bench: only the local
    /// stack's counted store has the counter on its clients.
    #[cfg(feature = "sqs")]
    #[test]
    fn only_a_counted_store_has_the_counter_on_its_clients() {
        use read::tests::names;
        let config = read::tests::sdk_config();
        let plain = Store::new(&config, names());
        assert_eq!(plain.ddb.config().interceptors().count(), 0);
        assert_eq!(plain.sqs.config().interceptors().count(), 0);
        let counted = Store::counted(&config, names(), RequestCounter::default());
        assert_eq!(counted.ddb.config().interceptors().count(), 1);
        assert_eq!(counted.sqs.config().interceptors().count(), 1);
    }

    // Needs two lazy clients to look at: built with them (`make test`
    // builds the workspace, whose local stack takes every client), it is
    // listed; built without, it is absent rather than passing empty.
    #[cfg(all(feature = "sqs", feature = "kms"))]
    #[test]
    fn only_dynamodb_is_built_with_the_store() {
        let config = read::tests::sdk_config();
        let store = read::tests::store_with(aws_sdk_dynamodb::Client::new(&config));
        assert!(store.sqs.client.get().is_none());
        assert!(store.kms.client.get().is_none());
        let _ = store.kms.config();
        assert!(store.kms.client.get().is_some());
        assert!(
            store.sqs.client.get().is_none(),
            "one client's use builds no other"
        );
    }
}
