//! The run's decisions: where it starts (§3), its candidates (F-7.3),
//! attempt, probe or skip (§8), the next step (F-7.4, F-7.5, F-6.7), the
//! summary of an exhausted chain (F-10.3, F-10.4), slow targets (F-12.3).

use crate::profiles::{record, RankedProfile, RecordedReason, StoredProfile};

/// Longest chain a policy may return: far beyond any configured list, short
/// enough that a runaway module cannot make a run try thousands of models.
pub const MAX_CHAIN: usize = 64;

/// Serde attributes of the enums here.
macro_rules! names {
    ($(#[$meta:meta])* $vis:vis enum $name:ident $body:tt) => {
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(rename_all = "snake_case")
        )]
        $(#[$meta])*
        $vis enum $name $body
    };
}

names! {
    /// Why the current model was chosen; it decides whether fallback is
    /// allowed (§3).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum SelectionSource {
        /// `agents.defaults.model.primary` (F-3.1).
        ConfiguredDefault,
        /// `agents.list[].model` (F-3.2).
        AgentPrimary,
        /// A runtime fallback persisted on the session (F-3.3).
        AutoOverride,
        /// A person's choice on the session (F-3.4).
        UserOverride,
        /// `modelOverride` without `modelOverrideSource` (F-3.5).
        LegacyOverride,
        /// A cron job's `payload.model` (F-3.6).
        CronJob,
        /// A heartbeat run.
        Heartbeat,
    }
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

names! {
    /// Who wrote a session's model override.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum OverrideSource {
        /// The runner, falling back (F-3.3).
        Auto,
        /// A person (F-3.4).
        User,
    }
}

record! {
    /// A session's model override, as stored on the session (F-9.1).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct SessionOverride {
        /// `provider/model`.
        pub model: String,
        /// Who wrote it; `None` for a legacy entry without a source.
        #[cfg_attr(feature = "serde", serde(default))]
        pub source: Option<OverrideSource>,
        /// The model an auto override fell back from.
        #[cfg_attr(feature = "serde", serde(default))]
        pub origin: Option<String>,
    }
}

record! {
    /// Where a run starts (§3).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct SelectionRequest {
        /// `agents.defaults.model.primary`.
        pub configured_primary: Option<String>,
        /// The agent's own model (`agents.list[].model`), if it has one.
        pub agent_primary: Option<String>,
        /// A cron job's `payload.model`.
        pub cron_model: Option<String>,
        /// The run is a heartbeat.
        pub heartbeat: bool,
        /// The heartbeat's own model.
        pub heartbeat_model: Option<String>,
        /// The session's model override.
        pub session_override: Option<SessionOverride>,
        /// How often an auto override re-probes the configured primary
        /// (F-12.2); 0 never does.
        pub primary_probe_interval_ms: u64,
        /// When the session last tried its configured primary: its last
        /// probe, or the fallback that wrote the override.
        pub last_primary_probe_at: Option<u64>,
        /// Now.
        pub now_ms: u64,
    }
}

record! {
    /// The model a run starts with and why.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct Selection {
        /// The model; `None` when nothing is configured or selected.
        pub model: Option<String>,
        /// Why it was chosen.
        pub source: SelectionSource,
        /// The session's auto override must be cleared (F-3.3).
        pub clear_override: bool,
        /// Try the configured primary once before the auto override's model
        /// (F-12.2).
        #[cfg_attr(feature = "serde", serde(default))]
        pub probe_primary: bool,
    }
}

record! {
    /// What the candidate chain of a run is made from (F-7.3).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ChainRequest {
        /// The model the run starts with.
        pub requested: String,
        /// Why it was chosen.
        pub source: SelectionSource,
        /// `agents.defaults.model.primary`.
        #[cfg_attr(feature = "serde", serde(default))]
        pub configured_primary: Option<String>,
        /// `agents.defaults.model.fallbacks`.
        #[cfg_attr(feature = "serde", serde(default))]
        pub configured_fallbacks: Vec<String>,
        /// The selection's own fallbacks (an agent's, a cron job's); `None`
        /// when it gives none.
        #[cfg_attr(feature = "serde", serde(default))]
        pub source_fallbacks: Option<Vec<String>>,
        /// A caller's `fallbacksOverride`, used exactly.
        #[cfg_attr(feature = "serde", serde(default))]
        pub fallbacks_override: Option<Vec<String>>,
    }
}

record! {
    /// The candidates, requested model first.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct FallbackChain {
        /// `provider/model` each.
        pub candidates: Vec<String>,
        /// The selection is exact (F-7.6): a failure is reported, never
        /// answered by another model.
        pub strict: bool,
    }
}

record! {
    /// Everything that decides where a run starts and may go (§3, F-7.3,
    /// F-7.6, F-12.2).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct RunRequest {
        /// The `provider/model` the caller named, if any.
        pub requested: Option<String>,
        /// The configured model.
        pub configured_primary: Option<String>,
        /// The configured fallbacks.
        pub configured_fallbacks: Vec<String>,
        /// The run's agent's own model.
        pub agent_primary: Option<String>,
        /// The agent's own fallbacks, when it lists them.
        pub agent_fallbacks: Option<Vec<String>>,
        /// A cron job's model.
        pub cron_model: Option<String>,
        /// A cron job's fallbacks.
        pub cron_fallbacks: Option<Vec<String>>,
        /// The run is a heartbeat.
        pub heartbeat: bool,
        /// The heartbeat's own model.
        pub heartbeat_model: Option<String>,
        /// The session's model override.
        pub session_override: Option<SessionOverride>,
        /// When the session last tried the configured primary.
        pub last_primary_probe_at: Option<u64>,
        /// Now, when a session override is read (otherwise 0).
        pub now_ms: u64,
        /// A caller's own fallbacks, to be used exactly.
        pub fallbacks_override: Option<Vec<String>>,
        /// Each configured model's larger model for context overflows.
        pub overflow_to: Vec<(String, String)>,
        /// How often an auto override re-tries the primary (0: never).
        pub primary_probe_interval_ms: u64,
    }
}

record! {
    /// Where a run goes.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct RunPlan {
        /// The models to visit in order, the first the run starts with;
        /// empty when there is no model to use.
        pub candidates: Vec<String>,
        /// Why the first was chosen.
        pub source: SelectionSource,
        /// Failures are reported, never answered by an unrelated model.
        pub strict: bool,
        /// Clear the session's model override.
        pub clear_override: bool,
        /// Try the configured primary once, with one profile, first.
        pub probe_primary: bool,
    }
}

record! {
    /// Why a blocked profile is blocked.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct ProfileBlock {
        /// `provider:name`.
        pub profile: String,
        /// The reason of the window that ends last.
        pub reason: RecordedReason,
        /// When it ends.
        pub until: u64,
    }
}

record! {
    /// A candidate about to be tried (§8).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct CandidateRequest {
        /// The candidate, `provider/model`.
        pub model: String,
        /// The candidate is the chain's first.
        pub primary: bool,
        /// An earlier candidate of this run used the same provider (F-8.4).
        pub sibling: bool,
        /// `order-profiles` for this provider and model.
        pub ranked: Vec<RankedProfile>,
        /// Why each blocked profile is blocked.
        pub blocks: Vec<ProfileBlock>,
        /// The provider's last probe (the F-8.3 throttle).
        pub last_probe_at: Option<u64>,
        /// This run already made its transient probe of this provider (F-8.5).
        pub transient_probe_used: bool,
        /// Candidates come after this one (F-8.2: the primary is probed
        /// only when the chain goes on).
        #[cfg_attr(feature = "serde", serde(alias = "hasFallbacks"))]
        pub later_candidates: bool,
        /// The model's health (F-12.3).
        pub health: ModelHealth,
        /// Now.
        pub now_ms: u64,
    }
}

/// What to do with a candidate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "camelCase")
)]
pub enum CandidateDecision {
    /// Try these profiles, in order.
    Attempt(Vec<String>),
    /// Try these profiles as the trial of a slow model (F-12.3); the host
    /// marks the trial as started.
    Trial(Vec<String>),
    /// Every profile is blocked; try this one anyway, once.
    #[cfg_attr(feature = "serde", serde(rename_all = "camelCase"))]
    Probe {
        /// The profile to probe.
        profile: String,
        /// A transient probe (F-8.4), at most one per provider per run.
        transient: bool,
    },
    /// Skip it, with the reason of its soonest-free profile.
    Skip(RecordedReason),
}

record! {
    /// A model's recent responsiveness (F-12.3), kept per `provider/model`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct ModelHealth {
        /// Attempts in a row that ended on the attempt deadline.
        pub hangs: u32,
        /// When the last of them ended.
        pub last_hang_at: Option<u64>,
        /// Skipped until then while other candidates remain.
        pub slow_until: Option<u64>,
        /// A half-open trial started then and has not ended.
        pub trial_started_at: Option<u64>,
    }
}

names! {
    /// Whether a model may be attempted now.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Gate {
        /// Healthy, or nothing else remains: attempt it.
        Open,
        /// Its slow spell is over: this attempt decides.
        Trial,
        /// Slow, or another request's trial is under way: skip it.
        Skip,
    }
}

record! {
    /// A gate and the health to keep.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct GateDecision {
        /// Attempt, trial or skip.
        pub gate: Gate,
        /// The model's health after the decision.
        pub health: ModelHealth,
    }
}

record! {
    /// The profile-rotation caps of `auth.cooldowns.*` (F-6.7).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RotationConfig {
        /// Same-provider rotations on rate limits before model fallback.
        pub rate_limited_profile_rotations: u32,
        /// Same-provider rotations on overload before model fallback.
        pub overloaded_profile_rotations: u32,
        /// Wait before an overload rotation.
        pub overloaded_backoff_ms: u64,
        /// The longest explicit wait that may hold a request.
        #[cfg_attr(feature = "serde", serde(default = "unbounded_wait"))]
        pub wait_cap_ms: u64,
    }
}

/// A rotation config recorded without a wait cap puts no cap of its own.
#[cfg(feature = "serde")]
fn unbounded_wait() -> u64 {
    u64::MAX
}

record! {
    /// A failed attempt and where the run stands.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct FailedAttempt {
        /// The classified reason (`unknown` when none was named).
        pub reason: RecordedReason,
        /// How long the provider asked callers to wait.
        #[cfg_attr(feature = "serde", serde(default))]
        pub retry_after_ms: Option<u64>,
        /// The caller aborted the call.
        #[cfg_attr(feature = "serde", serde(default))]
        pub aborted: bool,
        /// The attempt ran to its deadline with nothing received.
        #[cfg_attr(feature = "serde", serde(default))]
        pub hung: bool,
        /// A live-switch error pointing at this model (F-9.6).
        #[cfg_attr(feature = "serde", serde(default))]
        pub live_switch_to: Option<String>,
        /// The profile was pinned by a person (F-4.5).
        #[cfg_attr(feature = "serde", serde(default))]
        pub user_pinned_profile: bool,
        /// Profile rotations already made on this candidate.
        #[cfg_attr(feature = "serde", serde(default))]
        pub rotations: u32,
        /// Profiles of this provider still untried for this candidate.
        #[cfg_attr(feature = "serde", serde(default))]
        pub profiles_left: u32,
        /// The chain.
        pub chain: Vec<String>,
        /// The failed candidate's place in it.
        pub position: u32,
        /// The larger model configured for this one's context overflows.
        #[cfg_attr(feature = "serde", serde(default))]
        pub overflow_to: Option<String>,
    }
}

names! {
    /// How an attempt on a model ended, for the model's health (F-12.3).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum AttemptEnd {
        /// It answered: a success or a typed error.
        Answered,
        /// It ran to its deadline with nothing received.
        Hung,
        /// It failed with an untyped server error.
        ServerError,
    }
}

names! {
    /// Why a run stops.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum StopReason {
        /// An explicit abort that is not timeout-shaped (F-7.5).
        Aborted,
        /// Context overflow stays with compaction, never fallback (F-5.9).
        ContextOverflow,
        /// The same payload would fail the same way (F-5.3, F-7.5a).
        Format,
        /// Surfaced to the runtime (F-7.5a).
        SessionExpired,
        /// No candidate is left.
        Exhausted,
    }
}

/// The next step of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "camelCase")
)]
pub enum RunStep {
    /// Try the next profile of the same provider after this many ms.
    RotateProfile(u64),
    /// Try the same profile once more after this many ms.
    WaitAndRetry(u64),
    /// Move to this chain position.
    Candidate(u32),
    /// Stop the run.
    Stop(StopReason),
}

record! {
    /// A failed or skipped candidate.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct AttemptRecord {
        /// `provider/model`.
        pub model: String,
        /// The provider, aliases resolved.
        pub provider: String,
        /// Why it failed or was skipped.
        pub reason: RecordedReason,
    }
}

record! {
    /// An exhausted chain.
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct SummaryRequest {
        /// The run's failed and skipped candidates.
        pub attempts: Vec<AttemptRecord>,
        /// Every stored profile.
        pub profiles: Vec<StoredProfile>,
        /// Now.
        pub now_ms: u64,
    }
}

record! {
    /// What people are told about an exhausted chain (F-10.3, F-10.4).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct RunSummary {
        /// The reason every attempt shared, if one.
        pub common_reason: Option<RecordedReason>,
        /// When the soonest attempted candidate is usable again.
        pub ready_at: Option<u64>,
    }
}
