//! A second failover policy: the default, except that a **context overflow
//! advances to the next candidate** instead of stopping the run.
//!
//! The default (spec F-5.9, F-7.5) keeps a context overflow with the caller's
//! compaction: the same prompt fails the same way on a model of the same
//! size. An operator whose fallbacks have larger context windows may prefer
//! to let the chain carry the request. Nothing else changes and no new
//! config is needed: every other decision is the default policy's.
//!
//! Build (the test `tests/swap.rs` does this):
//!
//! ```sh
//! cargo build --manifest-path examples/policy-context-advances/Cargo.toml \
//!     --target wasm32-unknown-unknown --release
//! ```
//!
//! then encode the core module as a component with `wit-component`.

#![cfg(target_arch = "wasm32")]

use policy_guest::component::exports::failover::policy::{classifier, meta, profiles, runner};
use policy_guest::component::exports::failover::policy::types::*;
use policy_guest::component::DefaultPolicy;

/// The changed policy.
struct ContextAdvances;

impl runner::Guest for ContextAdvances {
    /// The one change: a context overflow is handled as an unrecognised
    /// failure, which advances while candidates remain (F-7.4).
    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        let attempt = match attempt.reason {
            RecordedReason::ContextOverflow => FailedAttempt {
                reason: RecordedReason::Unknown,
                ..attempt
            },
            _ => attempt,
        };
        <DefaultPolicy as runner::Guest>::next_step(attempt, config)
    }

    fn resolve_selection(request: SelectionRequest) -> Selection {
        <DefaultPolicy as runner::Guest>::resolve_selection(request)
    }

    fn candidate_chain(request: ChainRequest) -> FallbackChain {
        <DefaultPolicy as runner::Guest>::candidate_chain(request)
    }

    fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
        <DefaultPolicy as runner::Guest>::decide_candidate(request)
    }

    /// The default's order and decision, as the two functions above give
    /// them (a module that changes either changes this too: the gate
    /// checks that they agree).
    fn plan_candidate(order: OrderRequest, facts: CandidateFacts) -> CandidatePlan {
        <DefaultPolicy as runner::Guest>::plan_candidate(order, facts)
    }

    fn summarise(request: SummaryRequest) -> RunSummary {
        <DefaultPolicy as runner::Guest>::summarise(request)
    }

    fn model_gate(health: ModelHealth, others_remain: bool, now_ms: u64) -> GateDecision {
        <DefaultPolicy as runner::Guest>::model_gate(health, others_remain, now_ms)
    }

    fn record_attempt_end(health: ModelHealth, hung: bool, now_ms: u64) -> ModelHealth {
        <DefaultPolicy as runner::Guest>::record_attempt_end(health, hung, now_ms)
    }
}

impl classifier::Guest for ContextAdvances {
    fn classify(report: ErrorReport) -> Classification {
        <DefaultPolicy as classifier::Guest>::classify(report)
    }

    fn classify_packed(report: Vec<u8>) -> Classification {
        <DefaultPolicy as classifier::Guest>::classify_packed(report)
    }

    fn classify_packed_batch(reports: Vec<u8>) -> Vec<Classification> {
        <DefaultPolicy as classifier::Guest>::classify_packed_batch(reports)
    }
}

impl profiles::Guest for ContextAdvances {
    fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
        <DefaultPolicy as profiles::Guest>::order_profiles(request)
    }

    fn pin_profile(request: PinRequest) -> PinDecision {
        <DefaultPolicy as profiles::Guest>::pin_profile(request)
    }

    fn record_failure(usage: Usage, event: FailureEvent, config: CooldownConfig) -> Usage {
        <DefaultPolicy as profiles::Guest>::record_failure(usage, event, config)
    }

    fn record_success(usage: Usage, model: Option<String>, now_ms: u64) -> Usage {
        <DefaultPolicy as profiles::Guest>::record_success(usage, model, now_ms)
    }
}

impl meta::Guest for ContextAdvances {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: "failover-context-advances".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            contract: policy_guest::CONTRACT.into(),
        }
    }
}

policy_guest::component::export_policy!(ContextAdvances);
