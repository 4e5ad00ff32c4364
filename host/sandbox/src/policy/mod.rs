//! Running policy modules: a narrow wrapper over wasmtime.
//!
//! The rest of the host sees [`PolicyEngine`] (one per process), [`Policy`]
//! (a checked module and its instances, a [`failover_policy::Decider`]) and
//! [`Loader`] (a [`failover_policy::PolicyLoader`]) — never a raw wasmtime
//! type.

mod adapter;
mod batch;
mod bindings;
mod compile_cache;
pub mod conformance;
mod decider;
mod engine;
mod error;
pub mod gate;
mod memo;
mod module;
mod pool;
mod profiles;
mod runner;
mod store;
pub mod wasi;

pub use batch::MAX_BATCH_REPORTS;
pub use bindings::{ContractVersion, CONTRACT};
pub use compile_cache::CompileCache;
pub use engine::PolicyEngine;
pub use gate::{CaseOutcome, GateReport, Loader, Refused};
pub use module::Policy;
pub use runner::MAX_CHAIN;

/// The default policy component (`policy-sdk/default-policy`: the policy
/// SDK's defaults, which are `policy-guest`'s core), built by the build
/// script and embedded so the binary needs no files at run time.
pub const DEFAULT_POLICY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default-policy.wasm"));
