//! [`Policy`] as the host's [`Decider`]: each decision a call into the
//! component.

use failover_policy::{
    Classification, Decider, PolicyError, PolicyStats, PolicyVersion, ProviderError, Success,
};
use policy_types::{
    AttemptEnd, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest, CooldownConfig,
    FailedAttempt, FailureEvent, ModelHealth, OrderRequest, PinDecision, PinRequest, RankedProfile,
    RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, SummaryRequest, Usage,
};

use super::module::Policy;

impl Decider for Policy {
    fn version(&self) -> &PolicyVersion {
        Policy::version(self)
    }
    fn stats(&self) -> Option<PolicyStats> {
        Some(Policy::stats(self))
    }
    fn classify(&self, error: &ProviderError, now_ms: u64) -> Result<Classification, PolicyError> {
        Policy::classify(self, error, now_ms)
    }
    fn order_profiles(&self, request: &OrderRequest) -> Result<Vec<RankedProfile>, PolicyError> {
        Policy::order_profiles(self, request)
    }
    fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
        Policy::pin_profile(self, request)
    }
    fn record_failure(
        &self,
        usage: &Usage,
        event: &FailureEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        Policy::record_failure(self, usage, event, config)
    }
    fn record_success(
        &self,
        usage: &Usage,
        success: &Success<'_>,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        Policy::record_success(self, usage, success, config)
    }
    fn plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError> {
        Policy::plan_run(self, request)
    }
    fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError> {
        Policy::decide_candidate(self, request)
    }
    fn plan_candidate(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        Policy::plan_candidate(self, order, facts)
    }
    fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError> {
        Policy::next_step(self, attempt, config)
    }
    fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
        Policy::summarise(self, request)
    }
    fn record_model_attempt(
        &self,
        health: &ModelHealth,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        Policy::record_model_attempt(self, health, end, now_ms)
    }
}
