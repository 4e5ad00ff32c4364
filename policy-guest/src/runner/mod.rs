//! The fallback runner's decisions (spec §3, §7, §8, §10): the candidate
//! chain, where a run starts, whether to attempt, probe or skip a candidate,
//! what to do after a failure, and the summary of an exhausted chain. The
//! host's runner drives these and re-implements none of them.

mod advance;
mod chain;
mod decide;
mod summary;

pub use advance::{next_step, FailedAttempt, NextStep, RotationConfig, StopReason};
pub use chain::{
    candidate_chain, resolve_selection, Chain, ChainRequest, Selection, SelectionRequest,
    SelectionSource, SessionOverride,
};
pub use decide::{
    decide_candidate, Block, CandidateDecision, CandidateRequest, PROBE_MARGIN_MS,
    PROBE_THROTTLE_MS,
};
pub use summary::{summarise, AttemptRecord, Summary};
