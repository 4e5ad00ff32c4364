//! The fallback runner's decisions (spec §3, §7, §8, §10, §12): the
//! candidate chain, where a run starts, whether to attempt, probe or skip a
//! candidate, whether a slow model may be tried, what to do after a
//! failure, and the summary of an exhausted chain. The host's runner drives
//! these and re-implements none of them.

mod advance;
mod chain;
mod decide;
mod health;
mod plan;
mod summary;

pub use advance::{next_step, TIMEOUT_PROFILE_ROTATIONS};
pub use chain::{candidate_chain, plan_run, resolve_selection};
pub use decide::{decide_candidate, decide_profiles, PROBE_MARGIN_MS, PROBE_THROTTLE_MS};
pub use health::{
    model_gate, record_attempt_end, record_model_attempt, HANG_WINDOW_MS, SLOW_AFTER_HANGS,
    SLOW_FOR_MS, TRIAL_EXPIRY_MS,
};
pub use plan::plan_candidate;
pub use policy_types::{
    AttemptEnd, AttemptRecord, CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt,
    FallbackChain, Gate, ModelHealth, OverrideSource, ProfileBlock, RotationConfig, RunPlan,
    RunRequest, RunStep, RunSummary, Selection, SelectionRequest, SelectionSource, SessionOverride,
    StopReason,
};
pub use summary::summarise;
