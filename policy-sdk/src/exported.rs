//! The contract's interfaces, implemented once for every [`Policy`]: each
//! exported function calls the policy's method of the same name.

use crate::bindings::exports::failover::policy::{classifier, meta, profiles, runner};
use crate::types::*;
use crate::{Exported, Policy};

impl<P: Policy> classifier::Guest for Exported<P> {
    fn classify(report: ErrorReport) -> Classification {
        P::classify(report)
    }
}

impl<P: Policy> profiles::Guest for Exported<P> {
    fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
        P::order_profiles(request)
    }
    fn pin_profile(request: PinRequest) -> PinDecision {
        P::pin_profile(request)
    }
    fn record_attempt(usage: Usage, event: AttemptEvent, config: CooldownConfig) -> Usage {
        P::record_attempt(usage, event, config)
    }
}

impl<P: Policy> runner::Guest for Exported<P> {
    fn plan_run(request: RunRequest) -> RunPlan {
        P::plan_run(request)
    }
    fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
        P::decide_candidate(request)
    }
    fn record_model_attempt(health: ModelHealth, end: AttemptEnd, now_ms: u64) -> ModelHealth {
        P::record_model_attempt(health, end, now_ms)
    }
    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        P::next_step(attempt, config)
    }
    fn summarise(
        attempts: Vec<AttemptRecord>,
        profiles: Vec<StoredProfile>,
        now_ms: u64,
    ) -> RunSummary {
        P::summarise(attempts, profiles, now_ms)
    }
}

impl<P: Policy> meta::Guest for Exported<P> {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: P::NAME.into(),
            version: P::VERSION.into(),
        }
    }
}
