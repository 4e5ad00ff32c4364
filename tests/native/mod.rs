//! The policy core run natively on the same input the component gets. Host
//! and core share the contract's types (`policy-types`), so nothing is
//! converted: the same cases run natively and through the component.
//! Shared by the integration tests and the benchmark (`#[path]`).

use failover::report::FlatReport;

/// The report the core reads: the one the component gets.
pub fn to_core(report: &FlatReport) -> policy_guest::ErrorReport {
    report.report.clone()
}

/// The core's profile functions.
#[allow(unused_imports)] // The benchmark includes this file but uses only `to_core`.
pub mod profiles {
    pub use policy_guest::profiles::{order_profiles, pin_profile, record_failure, record_success};
}

/// The core's runner functions, in the contract's shapes.
#[allow(dead_code, unused_imports)] // The benchmark uses only `to_core`.
pub mod runner {
    use failover::runner::{GateDecision, ModelHealth, RunSummary, SummaryRequest};

    pub use policy_guest::runner::{
        candidate_chain, decide_candidate, next_step, plan_candidate, record_attempt_end,
        resolve_selection,
    };

    pub fn model_gate(health: &ModelHealth, others_remain: bool, now_ms: u64) -> GateDecision {
        let (gate, health) = policy_guest::runner::model_gate(health, others_remain, now_ms);
        GateDecision { gate, health }
    }

    pub fn summarise(request: &SummaryRequest) -> RunSummary {
        policy_guest::runner::summarise(&request.attempts, &request.profiles, request.now_ms)
    }
}
