//! A second failover policy: the default, except that a **context overflow
//! advances to the next candidate** instead of stopping the run.
//!
//! The default (spec F-5.9, F-7.5) keeps a context overflow with the caller's
//! compaction: the same prompt fails the same way on a model of the same
//! size. An operator whose fallbacks have larger context windows may prefer
//! to let the chain carry the request. Nothing else changes and no new
//! config is needed: every other decision is the default policy's.
//!
//! Build it into a component with `failover policy build
//! examples/policy-context-advances` (the test `tests/swap.rs` does this).

use failover_policy_sdk::types::{FailedAttempt, FailureReason, RotationConfig, RunStep};
use failover_policy_sdk::{defaults, Policy};

struct ContextAdvances;

impl Policy for ContextAdvances {
    const NAME: &'static str = "failover-context-advances";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");

    /// The one change: a context overflow is handled as an unrecognised
    /// failure, which advances while candidates remain (F-7.4).
    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        let attempt = match attempt.reason {
            FailureReason::ContextOverflow => FailedAttempt {
                reason: FailureReason::Unknown,
                ..attempt
            },
            _ => attempt,
        };
        defaults::next_step(attempt, config)
    }
}

failover_policy_sdk::export!(ContextAdvances);
