//! Write a failover policy by overriding only the decisions it changes.
//!
//! A policy is a type that implements [`Policy`]. Every method of the trait
//! already answers as failover's default policy does, so an implementation
//! writes only the decisions it wants to own and inherits the rest.
//! [`export!`] makes the type the component's exports:
//!
//! ```ignore
//! use failover_policy_sdk::types::{Classification, ErrorReport, FailureReason};
//!
//! struct StatusOnly;
//!
//! impl failover_policy_sdk::Policy for StatusOnly {
//!     const NAME: &'static str = "status-only";
//!     const VERSION: &'static str = "0.1.0";
//!
//!     fn classify(report: ErrorReport) -> Classification {
//!         // ... decide from the HTTP status alone ...
//!     }
//! }
//!
//! failover_policy_sdk::export!(StatusOnly);
//! ```
//!
//! The crate implements the contract `failover:policy@1.0.0`
//! (`wit/policy.wit`, explained in `docs/contract.md`). The types of
//! [`types`] are the contract's records, enums and variants as wit-bindgen
//! generates them. [`defaults`] holds the default policy's decisions on
//! those types, for a method that changes a default's answer only in part.
//!
//! A policy crate is a `cdylib`: `failover policy new NAME` writes one and
//! `failover policy build DIR` builds it for `wasm32-unknown-unknown` and
//! makes the core module cargo writes a component. The default policy's
//! own crate, `policy-sdk/default-policy`, is one line of export. Nothing
//! here keeps state between calls: the contract gives every call a fresh
//! instance.

pub mod defaults;

/// The bindings wit-bindgen generates from the contract. A policy reaches
/// them through [`types`] and [`export!`]; they are public because the
/// exporting macro expands in the policy's crate.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "policy",
        path: "../wit",
        default_bindings_module: "failover_policy_sdk::bindings",
        pub_export_macro: true,
        export_macro_name: "export_policy",
    });
}

/// The contract's data: every record, enum and variant a decision reads or
/// answers.
pub mod types {
    pub use crate::bindings::exports::failover::policy::meta::PolicyInfo;
    pub use crate::bindings::exports::failover::policy::profiles::{
        AttemptEvent, CooldownConfig, OrderRequest, Outcome, PinDecision, PinRequest,
    };
    pub use crate::bindings::exports::failover::policy::runner::{
        AttemptRecord, CandidateDecision, CandidateRequest, RotationConfig, RunPlan, RunRequest,
        RunStep, RunSummary, StopReason,
    };
    pub use crate::bindings::exports::failover::policy::types::*;
}

use types::*;

/// The contract this crate implements.
pub const CONTRACT: &str = "failover:policy@1.0.0";

/// A failover policy: each method is one decision of the contract, and
/// answers as the default policy does until it is overridden. The methods
/// carry no `self`: a policy keeps no state, and nothing one call leaves in
/// memory may be relied on by the next (the host may give any call a fresh
/// instance).
pub trait Policy {
    /// The name operators see beside the module's sha256 (at most 256 bytes).
    const NAME: &'static str;
    /// The policy's own version (at most 256 bytes).
    const VERSION: &'static str;

    /// The verdict on a failed provider call (`classifier.classify`).
    fn classify(report: ErrorReport) -> Classification {
        defaults::classify(report)
    }
    /// A provider's profiles, best first (`profiles.order-profiles`).
    fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
        defaults::order_profiles(request)
    }
    /// The profile a session carries into its next run (`profiles.pin-profile`).
    fn pin_profile(request: PinRequest) -> PinDecision {
        defaults::pin_profile(request)
    }
    /// A profile's state after an attempt on it (`profiles.record-attempt`).
    fn record_attempt(usage: Usage, event: AttemptEvent, config: CooldownConfig) -> Usage {
        defaults::record_attempt(usage, event, config)
    }
    /// Where a run starts and may go (`runner.plan-run`).
    fn plan_run(request: RunRequest) -> RunPlan {
        defaults::plan_run(request)
    }
    /// Attempt, trial, probe or skip a candidate (`runner.decide-candidate`).
    fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
        defaults::decide_candidate(request)
    }
    /// A model's health after an attempt on it (`runner.record-model-attempt`).
    fn record_model_attempt(health: ModelHealth, end: AttemptEnd, now_ms: u64) -> ModelHealth {
        defaults::record_model_attempt(health, end, now_ms)
    }
    /// The step after a failed attempt (`runner.next-step`).
    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        defaults::next_step(attempt, config)
    }
    /// What people are told about an exhausted chain (`runner.summarise`).
    fn summarise(
        attempts: Vec<AttemptRecord>,
        profiles: Vec<StoredProfile>,
        now_ms: u64,
    ) -> RunSummary {
        defaults::summarise(attempts, profiles, now_ms)
    }
}

/// The default policy itself: a [`Policy`] that overrides nothing.
pub struct DefaultPolicy;

impl Policy for DefaultPolicy {
    const NAME: &'static str = policy_guest::POLICY_NAME;
    const VERSION: &'static str = policy_guest::POLICY_VERSION;
}

/// The exports of policy `P`: what [`export!`] hands to the bindings.
#[doc(hidden)]
pub struct Exported<P>(core::marker::PhantomData<P>);

mod exported;

/// Exports a [`Policy`] as the component's `failover:policy@1.0.0` world.
/// Use it once, at the top level of the policy's crate.
#[macro_export]
macro_rules! export {
    ($policy:ty) => {
        const _: () = {
            type FailoverPolicyExports = $crate::Exported<$policy>;
    $crate::bindings::export_policy!(FailoverPolicyExports with_types_in $crate::bindings);
        };
    };
}
