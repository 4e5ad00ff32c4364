//! The inputs and outputs of the policy's runner functions are the
//! contract's, from `policy-types` (camelCase in scenarios and traces).

pub use policy_types::{
    AttemptEnd, AttemptRecord, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest,
    FailedAttempt, ModelHealth, OverrideSource, ProfileBlock, RotationConfig, RunPlan, RunRequest,
    RunStep, RunSummary, SelectionSource, SessionOverride, StopReason, SummaryRequest,
};
