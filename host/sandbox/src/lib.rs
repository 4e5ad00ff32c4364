//! Running failover policy modules: WebAssembly components behind the WIT
//! contract (`wit/policy.wit`), loaded, gated and called under sandbox
//! limits. The only crate that sees wasmtime; an embedder who only
//! classifies errors needs nothing else.
//!
//! - [`policy`] — [`PolicyEngine`] (one per process), [`Policy`] (a checked
//!   module with warm instances and every answer checked), [`Limits`], the
//!   admission [`policy::gate`] and its conformance corpus, the [`Decider`]
//!   trait the engine decides through, and the embedded default policy.
//! - [`ProviderError`] — a failed provider call as captured, nested `error`
//!   / `cause` levels, and its JSON form.
//! - [`report`] — a [`ProviderError`] flattened and cut for the policy.
//! - [`Classification`] — the verdict: [`Reason`], [`Detail`], retry-after.
//!
//! The policy's data types are `policy-types`, re-exported as [`types`].

#![warn(missing_docs)]

pub mod classification;
mod flat_json;
pub mod policy;
pub mod provider_error;
pub mod report;

pub use classification::{Classification, Detail, Reason};
pub use policy::{Decider, Limits, Policy, PolicyEngine, PolicyError, PolicyStats, PolicyVersion};
pub use policy_types as types;
pub use provider_error::{InputError, ProviderError};
