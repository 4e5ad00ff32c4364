//! What the runner, the gateway and replay ask of a policy, as a trait.
//!
//! [`Policy`] — a WebAssembly component under the sandbox — is the
//! implementation everything ships with. The trait exists so that a
//! decision maker can be swapped as a whole and so that the same runs can be
//! driven by the policy core linked natively (the replay benchmark compares
//! the two); nothing in the host depends on which one it is given.

use crate::classification::Classification;
use crate::provider_error::ProviderError;
use policy_types::{
    AttemptEnd, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest, CooldownConfig,
    FailedAttempt, FailureEvent, ModelHealth, OrderRequest, PinDecision, PinRequest, RankedProfile,
    RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, SummaryRequest, Usage,
};

use super::error::PolicyError;
use super::module::{Policy, PolicyVersion};
use super::profiles::Success;

/// Every decision of the policy contract (see `wit/policy.wit`), in the
/// host's types.
pub trait Decider: Send + Sync {
    /// Which module decides.
    fn version(&self) -> &PolicyVersion;
    /// The verdict on a failed provider call (`classifier.classify`).
    fn classify(&self, error: &ProviderError, now_ms: u64) -> Result<Classification, PolicyError>;
    /// A provider's profiles, best first (`profiles.order-profiles`).
    fn order_profiles(&self, request: &OrderRequest) -> Result<Vec<RankedProfile>, PolicyError>;
    /// The profile a session uses next (`profiles.pin-profile`).
    fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError>;
    /// A profile's state after a failed call (`profiles.record-attempt`).
    fn record_failure(
        &self,
        usage: &Usage,
        event: &FailureEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError>;
    /// A profile's state after a successful call (`profiles.record-attempt`).
    fn record_success(
        &self,
        usage: &Usage,
        success: &Success<'_>,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError>;
    /// Where a run starts and may go (`runner.plan-run`).
    fn plan_run(&self, request: &RunRequest) -> Result<RunPlan, PolicyError>;
    /// Attempt, trial, probe or skip a candidate (`runner.decide-candidate`).
    fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError>;
    /// A candidate's order and the decision on it: `order-profiles`, then
    /// `decide-candidate` on its answer.
    fn plan_candidate(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        plan_by_two_calls(self, order, facts)
    }
    /// The step after a failed attempt (`runner.next-step`).
    fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError>;
    /// What people are told about an exhausted chain (`runner.summarise`).
    fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError>;
    /// A model's health after an attempt ended (`runner.record-model-attempt`).
    fn record_model_attempt(
        &self,
        health: &ModelHealth,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError>;
    /// Calls, traps and fuel since the module was loaded, when it counts
    /// them (a component under the sandbox does; a native core does not).
    fn stats(&self) -> Option<super::pool::PolicyStats> {
        None
    }
}

impl Decider for Policy {
    fn version(&self) -> &PolicyVersion {
        Policy::version(self)
    }
    fn stats(&self) -> Option<super::pool::PolicyStats> {
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

/// `order-profiles`, then `decide-candidate` on its answer, asked of
/// `decider`: a candidate planned, the blocks between them by the host's
/// rule.
pub fn plan_by_two_calls(
    decider: &(impl Decider + ?Sized),
    order: &OrderRequest,
    facts: &CandidateFacts,
) -> Result<CandidatePlan, PolicyError> {
    let request = facts.request(order, decider.order_profiles(order)?);
    let decision = decider.decide_candidate(&request)?;
    Ok(CandidatePlan {
        ranked: request.ranked,
        decision,
    })
}
