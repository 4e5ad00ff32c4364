//! Inputs and outputs of the policy's runner functions, as the host sees
//! them. Serde names are camelCase so scripted scenarios and recorded traces
//! read like the spec.

use serde::{Deserialize, Serialize};

use crate::auth::{RankedProfile, RecordedReason, StoredProfile};

/// Why the current model was chosen (spec §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionSource {
    ConfiguredDefault,
    AgentPrimary,
    AutoOverride,
    UserOverride,
    LegacyOverride,
    CronJob,
    Heartbeat,
}

impl SelectionSource {
    /// Every source, in the contract's order.
    pub const ALL: [SelectionSource; 7] = [
        SelectionSource::ConfiguredDefault,
        SelectionSource::AgentPrimary,
        SelectionSource::AutoOverride,
        SelectionSource::UserOverride,
        SelectionSource::LegacyOverride,
        SelectionSource::CronJob,
        SelectionSource::Heartbeat,
    ];
}

/// Who wrote a session's model override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverrideSource {
    Auto,
    User,
}

/// A session's model override (F-9.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOverride {
    pub model: String,
    #[serde(default)]
    pub source: Option<OverrideSource>,
    #[serde(default)]
    pub origin: Option<String>,
}

/// Where a run starts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SelectionRequest {
    pub configured_primary: Option<String>,
    pub agent_primary: Option<String>,
    pub cron_model: Option<String>,
    pub heartbeat: bool,
    pub heartbeat_model: Option<String>,
    pub session_override: Option<SessionOverride>,
    /// How often an auto override re-probes the configured primary
    /// (F-12.2); 0 never does.
    pub primary_probe_interval_ms: u64,
    /// When the session last tried its configured primary.
    pub last_primary_probe_at: Option<u64>,
    pub now_ms: u64,
}

/// The model a run starts with and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    pub model: Option<String>,
    pub source: SelectionSource,
    pub clear_override: bool,
    /// Try the configured primary once before the auto override (F-12.2).
    #[serde(default)]
    pub probe_primary: bool,
}

/// The candidate chain of a run (F-7.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainRequest {
    pub requested: String,
    pub source: SelectionSource,
    #[serde(default)]
    pub configured_primary: Option<String>,
    #[serde(default)]
    pub configured_fallbacks: Vec<String>,
    #[serde(default)]
    pub source_fallbacks: Option<Vec<String>>,
    #[serde(default)]
    pub fallbacks_override: Option<Vec<String>>,
}

/// Candidates, requested model first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FallbackChain {
    pub candidates: Vec<String>,
    pub strict: bool,
}

/// Why a blocked profile is blocked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileBlock {
    pub profile: String,
    pub reason: RecordedReason,
    pub until: u64,
}

/// A candidate about to be tried (spec §8).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CandidateRequest {
    pub primary: bool,
    pub sibling: bool,
    pub ranked: Vec<RankedProfile>,
    pub blocks: Vec<ProfileBlock>,
    pub last_probe_at: Option<u64>,
    pub transient_probe_used: bool,
    /// The chain has other candidates (F-8.2).
    pub has_fallbacks: bool,
    pub now_ms: u64,
}

/// What to do with a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CandidateDecision {
    /// Try these profiles, in order.
    Attempt(Vec<String>),
    /// Every profile is blocked; try this one anyway, once.
    #[serde(rename_all = "camelCase")]
    Probe { profile: String, transient: bool },
    /// Skip it, with the reason of its soonest-free profile.
    Skip(RecordedReason),
}

/// A model's recent responsiveness (F-12.3), kept per `provider/model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelHealth {
    /// Attempts in a row that ended on the attempt deadline.
    pub hangs: u32,
    pub last_hang_at: Option<u64>,
    /// Skipped until then while other candidates remain.
    pub slow_until: Option<u64>,
    /// A half-open trial started then and has not ended.
    pub trial_started_at: Option<u64>,
}

/// Whether a model may be attempted now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    Open,
    Trial,
    Skip,
}

/// A gate and the health to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateDecision {
    pub gate: Gate,
    pub health: ModelHealth,
}

/// The profile-rotation caps of `auth.cooldowns.*` (F-6.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RotationConfig {
    pub rate_limited_profile_rotations: u32,
    pub overloaded_profile_rotations: u32,
    pub overloaded_backoff_ms: u64,
}

/// A failed attempt and where the run stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedAttempt {
    pub reason: RecordedReason,
    #[serde(default)]
    pub aborted: bool,
    #[serde(default)]
    pub live_switch_to: Option<String>,
    #[serde(default)]
    pub user_pinned_profile: bool,
    #[serde(default)]
    pub rotations: u32,
    #[serde(default)]
    pub profiles_left: u32,
    pub chain: Vec<String>,
    pub position: u32,
}

/// Why a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    Aborted,
    ContextOverflow,
    Format,
    SessionExpired,
    Exhausted,
}

/// The next step of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RunStep {
    /// Try the next profile of the same provider after this many ms.
    RotateProfile(u64),
    /// Move to this chain position.
    Candidate(u32),
    Stop(StopReason),
}

/// A failed or skipped candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRecord {
    pub model: String,
    pub provider: String,
    pub reason: RecordedReason,
}

/// An exhausted chain.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SummaryRequest {
    pub attempts: Vec<AttemptRecord>,
    pub profiles: Vec<StoredProfile>,
    pub now_ms: u64,
}

/// What people are told about an exhausted chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub common_reason: Option<RecordedReason>,
    pub ready_at: Option<u64>,
}
