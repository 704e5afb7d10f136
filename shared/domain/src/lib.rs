//! The pure domain of adtrail: identifiers, money, account-local dates, the
//! sync plan and its outcomes, how Meta's answers are classified, and the
//! model and rules of leads, boards, pixels and conversions.
//!
//! Nothing here does I/O or knows an AWS type, so every rule of the seeds'
//! behaviour reference can be tested table-driven and in milliseconds. The
//! store, the Graph client and the Lambda handlers call into this crate; it
//! calls into nothing of theirs.

pub mod board;
pub mod capi;
pub mod catalog;
pub mod contact;
pub mod dates;
pub mod destinations;
pub mod error_codes;
pub mod events;
pub mod graph_error;
pub mod identifiers;
pub mod ids;
pub mod leadads;
pub mod leads;
pub mod links;
pub mod metrics;
pub mod money;
pub mod outcome;
pub mod pixels;
pub mod plan;
pub mod slots;
pub mod spend;
pub mod telemetry;
pub mod time;

pub use dates::{LocalDate, Timezone};
pub use ids::{AdAccountId, AdId, IdError, OwnerKey, SiteId};
pub use money::{Currency, MoneyError};
