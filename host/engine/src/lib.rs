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
//! - [`model`] — a chat request and its reply in the one shape every face
//!   and upstream translates to and from.
//! - [`faces`] — what clients speak: the OpenAI and Anthropic shapes the
//!   gateway reads requests in and writes replies back in.
//! - [`upstreams`] — what providers speak: one [`upstreams::Upstream`]
//!   per API, and the HTTP client that calls them (credentials, OAuth
//!   refresh, redaction, streaming).
//! - `wire` — formats with no I/O that faces and upstreams share: JSON
//!   read in one pass, server-sent events, tools, images.
//! - [`gateway`] — `failover serve`: the OpenAI- and Anthropic-compatible
//!   gateway.
//! - [`inspect`] — what the state says now: `failover status` and
//!   `GET /status`, and whether the default chain can serve (`GET /readyz`,
//!   `failover doctor`).
//! - [`replay`] — recording traffic and replaying it through any policy.
//! - [`names`] — provider names, `provider/model` references, profile ids.
//! - [`time`] — the clock: the system's, or a virtual one in tests.
//! - [`auth`] — the profile types, from `policy-types`.
//! - [`logging`] — log output.

#![warn(missing_docs)]

pub mod auth;
pub mod config;
pub mod faces;
pub mod gateway;
pub mod inspect;
pub mod logging;
pub mod model;
pub mod names;
pub mod replay;
pub mod runner;
pub mod state;
pub mod time;
pub mod upstreams;
mod wire;

/// Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): the
/// parsers that face untrusted bytes and are otherwise crate-private.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
