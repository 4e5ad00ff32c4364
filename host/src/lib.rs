//! failover: keeps LLM calls alive when providers fail.
//!
//! The deterministic policy (error classification today; ordering, cooldowns
//! and chain rules as they land) is a WebAssembly component behind the WIT
//! contract in `wit/`. This crate is the host around it.
//!
//! - [`policy`] loads and runs policy modules under sandbox [`Limits`]:
//!   [`PolicyEngine`], [`Policy`], [`PolicyVersion`].
//! - [`ProviderError`] is a failed provider call as captured, with nested
//!   `error` / `cause` levels and its JSON form.
//! - [`report`] flattens and cuts a [`ProviderError`] for the policy.
//! - [`Classification`] is the verdict: [`Reason`], [`Detail`], retry-after.
//! - [`cli`] is the `failover` command line.

pub mod auth;
pub mod chat;
pub mod classification;
pub mod cli;
pub mod config;
pub mod gateway;
pub mod logging;
pub mod policy;
pub mod provider_error;
pub mod providers;
pub mod replay;
pub mod report;
pub mod runner;
pub mod state;
pub mod status;

pub use classification::{Classification, Detail, Reason};
pub use policy::{Decider, Limits, Policy, PolicyEngine, PolicyError, PolicyStats, PolicyVersion};
pub use provider_error::{InputError, ProviderError};
