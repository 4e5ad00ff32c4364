//! The default failover policy.
//!
//! A pure, deterministic core: no I/O, no clock, no randomness. It builds
//! natively as an ordinary library (the host's native decider, tests,
//! benchmarks) and inside WebAssembly: the policy SDK's defaults are this
//! core, and the component the `failover` host embeds is built on the SDK.
//!
//! - [`classify`] turns a captured provider error into a [`Classification`]
//!   (spec §5): a failure reason, whether it advances the fallback chain, a
//!   diagnostic detail and the provider's requested wait.
//! - `phrases` lists every phrase the rules know; `build.rs` compiles it into
//!   a DFA and `signals` scans message text with it in one pass.
//! - `body` reads providers' JSON error bodies for codes and statuses.
//! - `codes` knows symbolic codes (errno names, SDK types, gRPC, AWS).
//! - `text` reads the shape of a message: a status at its start, an HTML
//!   page, a bare one-phrase message.
//! - `rules` decides one level's reason; `classify` combines nested levels.
//! - `retry_after` reads `retry-after-ms` / `retry-after` headers.
//! - [`profiles`] orders auth profiles, pins them to sessions and keeps
//!   their cooldown and disable windows (spec §4, §6).
//! - [`runner`] decides the fallback run: chain, start, attempt/probe/skip,
//!   next step, summary (spec §3, §7, §8, §10).

mod body;
mod classify;
mod codes;
/// The phrase table (shared with `build.rs`, which compiles it into a DFA).
mod phrases;
pub mod profiles;
mod retry_after;
mod rules;
pub mod runner;
mod signals;
mod text;
mod trim;

/// Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`): the
/// readers of untrusted text the rules use, otherwise private.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// The wait a header block asks for; never past the longest believed.
    pub fn retry_after(block: &str, now_ms: u64) -> Option<u64> {
        let wait = crate::retry_after::from_headers(block, now_ms);
        assert!(wait.is_none_or(|ms| ms <= crate::MAX_RETRY_AFTER_MS));
        wait
    }

    /// Reads a message as a provider's JSON error body (checking the lean
    /// reader against a whole `serde_json::Value`, and the body reader
    /// against serde_json's), and as a status written as text (`"429"`).
    pub fn body(message: &str) {
        crate::body::check_lean_reader(message);
        // Where the rules start reading a body: at its first `{` or `[`.
        if let Some(at) = message.find(['{', '[']) {
            crate::body::check_against_serde(&message[at..]);
        }
        if let Some(facts) = crate::body::parse(message) {
            assert!(facts.status.is_none_or(|s| (100..=599).contains(&s)));
            assert!(facts.offset <= message.len());
            assert!(facts
                .retry_delay_ms
                .is_none_or(|ms| ms <= crate::MAX_RETRY_AFTER_MS));
        }
        if let Some(status) = crate::body::status_from_text(message) {
            assert!((100..=599).contains(&status), "status {status}");
        }
    }
}

pub use body::MAX_JSON_BODY_BYTES;
pub use classify::{classify, classify_borrowed};
pub use policy_types::{Classification, Detail, ErrorLevel, ErrorReport, Reason};
pub use retry_after::MAX_RETRY_AFTER_MS;

/// The policy's name, as a host reports it.
pub const POLICY_NAME: &str = "failover-default";

/// The policy's version: the crate's.
pub const POLICY_VERSION: &str = env!("CARGO_PKG_VERSION");
