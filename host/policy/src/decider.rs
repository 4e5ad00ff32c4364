//! What the runner, the gateway and replay ask of a policy, as a trait.
//!
//! The sandbox's `Policy` — a WebAssembly component under sandbox limits —
//! is the implementation everything ships with. The trait exists so that a
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

use crate::error::PolicyError;
use crate::version::{PolicyStats, PolicyVersion};

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
    fn stats(&self) -> Option<PolicyStats> {
        None
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

/// A successful call on a profile: of which provider and model, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Success<'a> {
    /// The provider called.
    pub provider: &'a str,
    /// The model called.
    pub model: Option<&'a str>,
    /// When the call succeeded.
    pub now_ms: u64,
}
