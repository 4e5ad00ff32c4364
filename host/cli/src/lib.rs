//! failover: keeps LLM calls alive when providers fail.
//!
//! The `failover` command line ([`cli`]) over the crates that do the work,
//! re-exported here under the paths the tests, benchmarks and examples use:
//!
//! - `failover-sandbox`: [`policy`], [`provider_error`], [`report`],
//!   [`classification`] — running policy modules (the only crate with
//!   wasmtime).
//! - `failover-engine`: [`runner`], [`state`], [`config`], [`chat`],
//!   [`providers`], [`gateway`], [`replay`], [`status`], [`auth`],
//!   [`logging`].
//!
//! An embedder depends on `failover-engine` (or only `failover-sandbox` to
//! classify), not on this crate: it is the binary's, with clap and anyhow.

pub mod allocator;
pub mod cli;

/// The allocator of everything linking this crate: the binary, the tests
/// and the benchmarks — the floor proxy included, so the gateway is
/// measured against the same stack. Embedders of `failover-engine` keep
/// their own.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

pub use failover_engine::{
    auth, chat, config, gateway, logging, providers, readiness, replay, runner, state, status,
};
pub use failover_sandbox::{
    classification, policy, provider_error, report, Classification, Decider, Detail, InputError,
    Limits, Policy, PolicyEngine, PolicyError, PolicyStats, PolicyVersion, ProviderError, Reason,
};
