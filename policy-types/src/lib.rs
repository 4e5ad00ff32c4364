//! The failover policy's data, one set of types for both sides of the WIT
//! contract (`wit/policy.wit`): the default policy's core (`policy-guest`)
//! decides in them, the host calls and checks the policy in them. Each WIT
//! record, enum and variant has exactly one type here, field for field; the
//! generated bindings on each side convert to and from them through
//! [`mirror!`] — one conversion per side, written once.
//!
//! - [`classify`] — a captured provider error and the verdict on it (§5).
//! - [`inline`] — a short list kept in place, for what a module reads.
//! - [`profiles`] — profiles' routing state and the profile decisions
//!   (§4, §6).
//! - [`runner`] — the run's decisions: selection, chain, candidates, next
//!   step, summary, slow targets (§3, §7, §8, §10, F-12.3).
//!
//! With the `serde` feature, every type (de)serialises in the host's
//! formats: camelCase fields, snake_case enum names — the shapes of
//! `auth-state.json`, the JSONL case corpora and recorded traces.

#![warn(missing_docs)]

pub mod classify;
pub mod inline;
pub mod mirror;
pub mod plan;
pub mod profiles;
pub mod runner;

pub use profiles::counts_from_listed;

pub use classify::{Classification, Detail, ErrorLevel, ErrorReport, LevelRef, Reason};
pub use mirror::Mirror;
pub use plan::{profile_blocks, CandidateFacts, CandidatePlan};
pub use profiles::{
    ConfiguredProfile, CooldownConfig, CredentialKind, FailureEvent, ModelCooldown,
    ModelFailureCount, OrderRequest, PinDecision, PinRequest, PinSource, RankedProfile,
    RecordedReason, StoredProfile, Usage,
};
pub use runner::{
    AttemptEnd, AttemptRecord, CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt,
    FallbackChain, Gate, GateDecision, ModelHealth, OverrideSource, ProfileBlock, RotationConfig,
    RunPlan, RunRequest, RunStep, RunSummary, Selection, SelectionRequest, SelectionSource,
    SessionOverride, StopReason, SummaryRequest, MAX_CHAIN,
};
