//! The failover policy interface: what a host asks of a policy and what it
//! hands it, with no WebAssembly runtime.
//!
//! - [`Decider`] — every decision of the policy contract in the host's
//!   types: classify a failed call, order and pin profiles, record
//!   attempts, plan a run and its candidates, the next step, the summary.
//! - [`PolicyLoader`] — module bytes to an admitted [`Decider`] or the
//!   admission report; the sandbox implements it.
//! - [`ProviderError`] — a failed provider call as captured, nested
//!   `error` / `cause` levels, and its JSON form; [`report`] flattens and
//!   cuts it to the [`Limits`] before a policy reads it.
//! - [`Classification`] — the verdict: [`Reason`], [`Detail`], retry-after.
//! - [`PolicyError`] — a module refused or a call into it failed.
//!
//! The policy's data types are `policy-types`, re-exported as [`types`].
//! The runtime that runs policy modules (wasmtime) lives in
//! `failover-sandbox`; the engine depends on this crate alone.

#![warn(missing_docs)]

pub mod classification;
mod decider;
mod error;
pub mod limits;
mod loader;
mod narrow;
pub mod provider_error;
pub mod report;
mod routes;
mod version;

pub use classification::{Classification, Detail, Reason};
pub use decider::{plan_by_two_calls, Decider, Success};
pub use error::{PolicyError, TrapKind};
pub use limits::Limits;
pub use loader::{Admission, PolicyLoader};
pub use narrow::{for_provider, for_provider_ids, Narrow};
pub use policy_types as types;
pub use provider_error::{InputError, ProviderError};
pub use routes::routes_to;
pub use version::{PolicyStats, PolicyVersion};
