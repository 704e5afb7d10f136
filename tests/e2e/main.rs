//! The end-to-end tests, one module per part of the system, in one binary
//! so the workspace links once. Each test starts its own local stack
//! ([`adtrail_tests::Harness`]), so they run in parallel. `cargo test
//! --test e2e capi::` runs one part.

mod alarms;
mod api;
mod capi;
mod counter;
mod fault;
mod fault_platforms;
mod identity;
mod leadads;
mod login;
mod memory;
mod operations;
mod portable;
mod runtime;
mod store;
mod store_chunks;
mod store_held;
mod store_leases;
mod store_pages;
mod sync;
mod telemetry;
mod template;
