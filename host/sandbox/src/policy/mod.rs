//! Running policy modules: a narrow wrapper over wasmtime.
//!
//! The rest of the host sees [`PolicyEngine`] (one per process), [`Policy`]
//! (a checked module and its instances), [`PolicyVersion`] and [`Limits`] —
//! never a raw wasmtime type.

mod adapter;
mod batch;
mod bindings;
mod compile_cache;
pub mod conformance;
mod decider;
mod engine;
mod error;
pub mod gate;
mod limits;
mod memo;
mod module;
mod pool;
mod profiles;
mod runner;
pub mod wasi;

pub use batch::MAX_BATCH_REPORTS;
pub use bindings::{ContractVersion, CONTRACT, CONTRACT_VERSION};
pub use compile_cache::{CompileCache, STALE_AFTER as COMPILE_CACHE_STALE_AFTER};
pub use decider::{plan_by_two_calls, Decider};
pub use engine::{PolicyEngine, PERF_MAP_VAR};
pub use error::{PolicyError, TrapKind};
pub use gate::{CaseOutcome, GateReport, Refused};
pub use limits::*;
pub use module::{Policy, PolicyVersion, MAX_RETRY_AFTER_MS};
pub use pool::PolicyStats;
pub use profiles::{Narrow, Success, MAX_WINDOW_MS};
pub use runner::{routes_to, MAX_CHAIN};

/// The default policy component (`policy-sdk/default-policy`: the policy
/// SDK's defaults, which are `policy-guest`'s core), built by the build
/// script and embedded so the binary needs no files at run time.
pub const DEFAULT_POLICY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default-policy.wasm"));
