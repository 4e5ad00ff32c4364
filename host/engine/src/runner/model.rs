//! The inputs and outputs of the policy's runner functions are the
//! contract's, from `policy-types` (camelCase in scenarios and traces).

pub use policy_types::{
    AttemptRecord, CandidateDecision, CandidateFacts, CandidatePlan, CandidateRequest,
    ChainRequest, FailedAttempt, FallbackChain, Gate, GateDecision, ModelHealth, OverrideSource,
    PlanHold, ProfileBlock, RotationConfig, RunStep, RunSummary, Selection, SelectionRequest,
    SelectionSource, SessionOverride, StopReason, SummaryRequest,
};
