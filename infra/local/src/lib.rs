//! The local stack: everything `make demo`, `make local` and the tests run
//! on a laptop without AWS or Docker. moto in server mode plays DynamoDB,
//! SQS, KMS, S3 and EventBridge (made from `template.yaml`); the fake Graph
//! API plays Meta; the runner plays the schedules, the event source mappings
//! and API Gateway.

pub mod app;
pub mod cloud;
pub mod http;
pub mod jwt;
pub mod moto;
pub mod runner;
pub mod sam_env;
pub mod sample;
pub mod stack;
pub mod template;

pub use runner::{MovableClock, OffsetClock, Runner, TickReport};
pub use stack::LocalStack;
pub use template::Template;
