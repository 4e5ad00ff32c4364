//! failover: keeps LLM calls alive when providers fail.
//!
//! The `failover` command line ([`cli`]) over the crates that do the work,
//! re-exported here under the paths the tests, benchmarks and examples use:
//!
//! - `failover-policy`: [`Decider`], [`PolicyLoader`], [`limits`],
//!   [`provider_error`], [`report`], [`classification`] — the policy
//!   interface, no runtime.
//! - `failover-sandbox`: [`policy`], [`Policy`], [`PolicyEngine`] —
//!   running policy modules (the only crate with wasmtime).
//! - `failover-engine`: [`runner`], [`state`], [`config`], [`model`],
//!   [`faces`], [`upstreams`], [`gateway`], [`replay`], [`inspect`],
//!   [`names`], [`time`], [`auth`], [`logging`] — deciding through a
//!   [`Decider`] alone.
//!
//! This crate is where the engine and the sandbox meet: `serve` hands the
//! gateway the sandbox's [`policy::Loader`]. An embedder depends on
//! `failover-engine` and `failover-sandbox` (or only those two with
//! `failover-policy` to classify), not on this crate: it is the binary's,
//! with clap and anyhow.

pub mod allocator;
pub mod cli;

/// The allocator of everything linking this crate: the binary, the tests
/// and the benchmarks — the floor proxy included, so the gateway is
/// measured against the same stack. Embedders of `failover-engine` keep
/// their own.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

pub use failover_engine::{
    auth, config, faces, gateway, inspect, logging, model, names, replay, runner, state, time,
    upstreams,
};
pub use failover_policy::{
    classification, limits, plan_by_two_calls, provider_error, report, types, Admission,
    Classification, Decider, Detail, InputError, Limits, PolicyError, PolicyLoader, PolicyStats,
    PolicyVersion, ProviderError, Reason, Success, TrapKind,
};
pub use failover_sandbox::{policy, Policy, PolicyEngine};
