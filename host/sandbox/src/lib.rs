//! Running failover policy modules: WebAssembly components behind the WIT
//! contract (`wit/policy.wit`), loaded, gated and called under sandbox
//! limits. The only crate that sees wasmtime.
//!
//! - [`policy`] — [`PolicyEngine`] (one per process), [`Policy`] (a checked
//!   module with warm instances and every answer checked, a
//!   [`failover_policy::Decider`]), the admission [`policy::gate`] and its
//!   conformance corpus, [`Loader`] (the gate as a
//!   [`failover_policy::PolicyLoader`]), and the embedded default policy.
//!
//! What a host hands a policy and asks of it — provider errors, reports,
//! limits, the decider trait — is `failover-policy`.

#![warn(missing_docs)]

pub mod policy;

pub use policy::{Loader, Policy, PolicyEngine};
