//! The failover engine: everything around the policy but running it. It
//! decides through the `failover-policy` interface alone; no WebAssembly
//! runtime is linked here (the CLI joins it with the sandbox).
//!
//! - [`runner`] — the fallback run: one request through the candidate chain,
//!   rotating profiles inside a provider, deciding every step through a
//!   [`failover_policy::Decider`].
//! - [`state`] — profiles, their routing state and sessions on disk, safe
//!   across processes.
//! - [`config`] — the JSON5 config.
//! - [`chat`] — chat requests and replies in the OpenAI and Anthropic shapes.
//! - [`providers`] — calling OpenAI-compatible and Anthropic endpoints over
//!   HTTP: credentials, OAuth refresh, redaction, streaming.
//! - [`gateway`] — `failover serve`: the OpenAI- and Anthropic-compatible
//!   gateway.
//! - [`inspect`] — what the state says now: `failover status` and
//!   `GET /status`, and whether the default chain can serve (`GET /readyz`,
//!   `failover doctor`).
//! - [`replay`] — recording traffic and replaying it through any policy.
//! - [`auth`] — the profile types, from `policy-types`.
//! - [`logging`] — log output.

#![warn(missing_docs)]

pub mod auth;
pub mod chat;
pub mod config;
pub mod gateway;
pub mod inspect;
pub mod logging;
pub mod providers;
pub mod replay;
pub mod runner;
pub mod state;

/// Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): the
/// parsers that face untrusted bytes and are otherwise crate-private.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
