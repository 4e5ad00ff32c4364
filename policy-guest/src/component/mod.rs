//! The WIT export glue: the generated bindings, and each exported function
//! as its core function between two conversions (`policy_types::mirror_contract!`
//! writes them all). No policy logic lives here.
//!
//! [`DefaultPolicy`] implements every exported interface. Another guest can
//! reuse it (feature `bindings`): implement the interfaces on its own type,
//! delegate to `DefaultPolicy` for all but the rule it changes, and export
//! with `policy_guest::component::export_policy!(ItsType)`. The default component
//! (feature `component`) exports `DefaultPolicy` itself.

use policy_types::Mirror;

wit_bindgen::generate!({
    world: "policy",
    path: "../wit",
    // Other crates export through this crate's bindings.
    default_bindings_module: "policy_guest::component",
    pub_export_macro: true,
    export_macro_name: "export_policy",
});

use exports::failover::policy::types as wit;
use exports::failover::policy::{classifier, meta, profiles, runner};

policy_types::mirror_contract!(wit);

/// The default policy's implementation of every exported interface.
pub struct DefaultPolicy;

impl classifier::Guest for DefaultPolicy {
    fn classify(report: wit::ErrorReport) -> wit::Classification {
        crate::classify(&report.mirror()).mirror()
    }
}

impl meta::Guest for DefaultPolicy {
    fn describe() -> wit::PolicyInfo {
        wit::PolicyInfo {
            name: crate::POLICY_NAME.into(),
            version: crate::POLICY_VERSION.into(),
            contract: crate::CONTRACT.into(),
        }
    }
}

impl profiles::Guest for DefaultPolicy {
    fn order_profiles(request: wit::OrderRequest) -> Vec<wit::RankedProfile> {
        crate::profiles::order_profiles(&request.mirror()).mirror()
    }

    fn pin_profile(request: wit::PinRequest) -> wit::PinDecision {
        crate::profiles::pin_profile(&request.mirror()).mirror()
    }

    fn record_failure(
        usage: wit::Usage,
        event: wit::FailureEvent,
        config: wit::CooldownConfig,
    ) -> wit::Usage {
        crate::profiles::record_failure(&usage.mirror(), &event.mirror(), &config.mirror()).mirror()
    }

    fn record_success(usage: wit::Usage, model: Option<String>, now_ms: u64) -> wit::Usage {
        crate::profiles::record_success(&usage.mirror(), model.as_deref(), now_ms).mirror()
    }
}

impl runner::Guest for DefaultPolicy {
    fn resolve_selection(request: wit::SelectionRequest) -> wit::Selection {
        crate::runner::resolve_selection(&request.mirror()).mirror()
    }

    fn candidate_chain(request: wit::ChainRequest) -> wit::FallbackChain {
        crate::runner::candidate_chain(&request.mirror()).mirror()
    }

    fn decide_candidate(request: wit::CandidateRequest) -> wit::CandidateDecision {
        crate::runner::decide_candidate(&request.mirror()).mirror()
    }

    fn next_step(attempt: wit::FailedAttempt, config: wit::RotationConfig) -> wit::RunStep {
        crate::runner::next_step(&attempt.mirror(), &config.mirror()).mirror()
    }

    fn model_gate(health: wit::ModelHealth, others_remain: bool, now_ms: u64) -> wit::GateDecision {
        let (gate, health) = crate::runner::model_gate(&health.mirror(), others_remain, now_ms);
        policy_types::GateDecision { gate, health }.mirror()
    }

    fn record_attempt_end(health: wit::ModelHealth, hung: bool, now_ms: u64) -> wit::ModelHealth {
        crate::runner::record_attempt_end(&health.mirror(), hung, now_ms).mirror()
    }

    fn summarise(request: wit::SummaryRequest) -> wit::RunSummary {
        crate::runner::summarise(
            &request.attempts.mirror(),
            &request.profiles.mirror(),
            request.now_ms,
        )
        .mirror()
    }
}

#[cfg(feature = "component")]
export_policy!(DefaultPolicy with_types_in self);
