//! The sync end to end, through the queues: the dispatcher leases, the worker
//! reads the fake Meta and writes under the lease, outcomes and back-offs
//! land on the account as seed 000 says. One module per part of the sync.

mod backfill;
mod catalog;
mod failures;
mod leases;
mod slots;
