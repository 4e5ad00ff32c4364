//! The policy's runner decisions (spec §3, §7, §8, §10), called through the
//! component and checked before the host acts on them.

use super::bindings::exports::failover::policy::types as wit;
use super::error::PolicyError;
use super::module::Policy;
use super::profiles::{ranked_to_wit, recorded_from_wit, recorded_to_wit, stored_to_wit};
use crate::runner::{
    AttemptRecord, CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, FallbackChain,
    Gate, GateDecision, ModelHealth, OverrideSource, RotationConfig, RunStep, RunSummary,
    Selection, SelectionRequest, SelectionSource, StopReason, SummaryRequest,
};

/// Longest chain a policy may return: far beyond any configured list, short
/// enough that a runaway module cannot make a run try thousands of models.
pub const MAX_CHAIN: usize = 64;

impl Policy {
    /// The model a run starts with and why.
    pub fn resolve_selection(&self, request: &SelectionRequest) -> Result<Selection, PolicyError> {
        let input = wit::SelectionRequest {
            configured_primary: request.configured_primary.clone(),
            agent_primary: request.agent_primary.clone(),
            cron_model: request.cron_model.clone(),
            heartbeat: request.heartbeat,
            heartbeat_model: request.heartbeat_model.clone(),
            session_override: request
                .session_override
                .as_ref()
                .map(|o| wit::SessionOverride {
                    model: o.model.clone(),
                    source: o.source.map(|s| match s {
                        OverrideSource::Auto => wit::OverrideSource::Auto,
                        OverrideSource::User => wit::OverrideSource::User,
                    }),
                    origin: o.origin.clone(),
                }),
            primary_probe_interval_ms: request.primary_probe_interval_ms,
            last_primary_probe_at: request.last_primary_probe_at,
            now_ms: request.now_ms,
        };
        let selection = self.call("resolve-selection", |store, guest| {
            guest
                .failover_policy_runner()
                .call_resolve_selection(store, &input)
        })?;
        let offered = [
            &request.configured_primary,
            &request.agent_primary,
            &request.cron_model,
            &request.heartbeat_model,
        ]
        .into_iter()
        .flatten()
        .chain(request.session_override.as_ref().map(|o| &o.model));
        let known = offered.clone().any(|m| Some(m) == selection.model.as_ref());
        if selection.model.is_some() && !known {
            return Err(PolicyError::InvalidOutput {
                call: "resolve-selection",
                problem: "it chose a model it was not offered".into(),
            });
        }
        let auto = request
            .session_override
            .as_ref()
            .is_some_and(|o| o.source == Some(OverrideSource::Auto));
        let probe_allowed = auto
            && request.configured_primary.is_some()
            && request.configured_primary != selection.model;
        if selection.probe_primary && !probe_allowed {
            return Err(PolicyError::InvalidOutput {
                call: "resolve-selection",
                problem: "it asked to probe the primary without an auto override on another model"
                    .into(),
            });
        }
        Ok(Selection {
            model: selection.model,
            source: source_from_wit(selection.source),
            clear_override: selection.clear_override,
            probe_primary: selection.probe_primary,
        })
    }

    /// The candidates of a run, requested model first.
    pub fn candidate_chain(&self, request: &ChainRequest) -> Result<FallbackChain, PolicyError> {
        let input = wit::ChainRequest {
            requested: request.requested.clone(),
            source: source_to_wit(request.source),
            configured_primary: request.configured_primary.clone(),
            configured_fallbacks: request.configured_fallbacks.clone(),
            source_fallbacks: request.source_fallbacks.clone(),
            fallbacks_override: request.fallbacks_override.clone(),
        };
        let chain = self.call("candidate-chain", |store, guest| {
            guest
                .failover_policy_runner()
                .call_candidate_chain(store, &input)
        })?;
        let invalid = |problem: String| PolicyError::InvalidOutput {
            call: "candidate-chain",
            problem,
        };
        if chain.candidates.first() != Some(&request.requested) {
            return Err(invalid("the requested model must come first".into()));
        }
        if chain.candidates.len() > MAX_CHAIN {
            return Err(invalid(format!(
                "{} candidates (at most {MAX_CHAIN})",
                chain.candidates.len()
            )));
        }
        let offered = |model: &String| {
            request.configured_fallbacks.contains(model)
                || request.configured_primary.as_ref() == Some(model)
                || request
                    .source_fallbacks
                    .iter()
                    .flatten()
                    .any(|m| m == model)
                || request
                    .fallbacks_override
                    .iter()
                    .flatten()
                    .any(|m| m == model)
        };
        if let Some(stranger) = chain.candidates[1..].iter().find(|m| !offered(m)) {
            return Err(invalid(format!(
                "it added {stranger:?}, which no list offered"
            )));
        }
        Ok(FallbackChain {
            candidates: chain.candidates,
            strict: chain.strict,
        })
    }

    /// Attempt, probe or skip a candidate.
    pub fn decide_candidate(
        &self,
        request: &CandidateRequest,
    ) -> Result<CandidateDecision, PolicyError> {
        let input = wit::CandidateRequest {
            primary: request.primary,
            sibling: request.sibling,
            ranked: request.ranked.iter().map(ranked_to_wit).collect(),
            blocks: request
                .blocks
                .iter()
                .map(|b| wit::ProfileBlock {
                    profile: b.profile.clone(),
                    reason: recorded_to_wit(b.reason),
                    until: b.until,
                })
                .collect(),
            last_probe_at: request.last_probe_at,
            transient_probe_used: request.transient_probe_used,
            has_fallbacks: request.has_fallbacks,
            now_ms: request.now_ms,
        };
        let decision = self.call("decide-candidate", |store, guest| {
            guest
                .failover_policy_runner()
                .call_decide_candidate(store, &input)
        })?;
        let offered = |id: &str| request.ranked.iter().any(|r| r.id == id);
        let decision = match decision {
            wit::CandidateDecision::Attempt(profiles) => CandidateDecision::Attempt(profiles),
            wit::CandidateDecision::Probe(probe) => CandidateDecision::Probe {
                profile: probe.profile,
                transient: probe.transient,
            },
            wit::CandidateDecision::Skip(reason) => {
                CandidateDecision::Skip(recorded_from_wit(reason))
            }
        };
        let named: Vec<&str> = match &decision {
            CandidateDecision::Attempt(profiles) => profiles.iter().map(String::as_str).collect(),
            CandidateDecision::Probe { profile, .. } => vec![profile.as_str()],
            CandidateDecision::Skip(_) => Vec::new(),
        };
        if let Some(stranger) = named.iter().find(|id| !offered(id)) {
            return Err(PolicyError::InvalidOutput {
                call: "decide-candidate",
                problem: format!("it named profile {stranger:?}, which was not offered"),
            });
        }
        if matches!(&decision, CandidateDecision::Attempt(p) if p.is_empty()) {
            return Err(PolicyError::InvalidOutput {
                call: "decide-candidate",
                problem: "it asked to attempt no profile".into(),
            });
        }
        Ok(decision)
    }

    /// The step after a failed attempt.
    pub fn next_step(
        &self,
        attempt: &FailedAttempt,
        config: &RotationConfig,
    ) -> Result<RunStep, PolicyError> {
        let input = wit::FailedAttempt {
            reason: recorded_to_wit(attempt.reason),
            aborted: attempt.aborted,
            live_switch_to: attempt.live_switch_to.clone(),
            user_pinned_profile: attempt.user_pinned_profile,
            rotations: attempt.rotations,
            profiles_left: attempt.profiles_left,
            chain: attempt.chain.clone(),
            position: attempt.position,
        };
        let wit_config = wit::RotationConfig {
            rate_limited_profile_rotations: config.rate_limited_profile_rotations,
            overloaded_profile_rotations: config.overloaded_profile_rotations,
            overloaded_backoff_ms: config.overloaded_backoff_ms,
        };
        let step = self.call("next-step", |store, guest| {
            guest
                .failover_policy_runner()
                .call_next_step(store, &input, wit_config)
        })?;
        let invalid = |problem: String| PolicyError::InvalidOutput {
            call: "next-step",
            problem,
        };
        Ok(match step {
            wit::RunStep::RotateProfile(wait_ms) => {
                if attempt.profiles_left == 0 {
                    return Err(invalid("it rotated with no profile left".into()));
                }
                if wait_ms > super::MAX_WINDOW_MS {
                    return Err(invalid(format!("a wait of {wait_ms} ms")));
                }
                RunStep::RotateProfile(wait_ms)
            }
            wit::RunStep::Candidate(position) => {
                if position <= attempt.position || position as usize >= attempt.chain.len() {
                    return Err(invalid(format!(
                        "it moved to position {position} from {} of a chain of {}",
                        attempt.position,
                        attempt.chain.len()
                    )));
                }
                RunStep::Candidate(position)
            }
            wit::RunStep::Stop(reason) => RunStep::Stop(match reason {
                wit::StopReason::Aborted => StopReason::Aborted,
                wit::StopReason::ContextOverflow => StopReason::ContextOverflow,
                wit::StopReason::Format => StopReason::Format,
                wit::StopReason::SessionExpired => StopReason::SessionExpired,
                wit::StopReason::Exhausted => StopReason::Exhausted,
            }),
        })
    }

    /// Whether a model may be attempted now (F-12.3), and its health from
    /// now on.
    pub fn model_gate(
        &self,
        health: &ModelHealth,
        others_remain: bool,
        now_ms: u64,
    ) -> Result<GateDecision, PolicyError> {
        let input = health_to_wit(health);
        let decision = self.call("model-gate", |store, guest| {
            guest
                .failover_policy_runner()
                .call_model_gate(store, input, others_remain, now_ms)
        })?;
        let health = checked_health("model-gate", decision.health, now_ms)?;
        Ok(GateDecision {
            gate: match decision.gate {
                wit::Gate::Open => Gate::Open,
                wit::Gate::Trial => Gate::Trial,
                wit::Gate::Skip => Gate::Skip,
            },
            health,
        })
    }

    /// A model's health after an attempt on it ended (F-12.3).
    pub fn record_attempt_end(
        &self,
        health: &ModelHealth,
        hung: bool,
        now_ms: u64,
    ) -> Result<ModelHealth, PolicyError> {
        let input = health_to_wit(health);
        let health = self.call("record-attempt-end", |store, guest| {
            guest
                .failover_policy_runner()
                .call_record_attempt_end(store, input, hung, now_ms)
        })?;
        checked_health("record-attempt-end", health, now_ms)
    }

    /// The summary of an exhausted chain.
    pub fn summarise(&self, request: &SummaryRequest) -> Result<RunSummary, PolicyError> {
        let input = wit::SummaryRequest {
            attempts: request
                .attempts
                .iter()
                .map(|a: &AttemptRecord| wit::AttemptRecord {
                    model: a.model.clone(),
                    provider: a.provider.clone(),
                    reason: recorded_to_wit(a.reason),
                })
                .collect(),
            profiles: request.profiles.iter().map(stored_to_wit).collect(),
            now_ms: request.now_ms,
        };
        let summary = self.call("summarise", |store, guest| {
            guest.failover_policy_runner().call_summarise(store, &input)
        })?;
        if summary.ready_at.is_some_and(|at| {
            at <= request.now_ms || at > request.now_ms.saturating_add(super::MAX_WINDOW_MS)
        }) {
            return Err(PolicyError::InvalidOutput {
                call: "summarise",
                problem: "its ready time is not in the coming week".into(),
            });
        }
        Ok(RunSummary {
            common_reason: summary.common_reason.map(recorded_from_wit),
            ready_at: summary.ready_at,
        })
    }
}

fn health_to_wit(health: &ModelHealth) -> wit::ModelHealth {
    wit::ModelHealth {
        hangs: health.hangs,
        last_hang_at: health.last_hang_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

/// A module's model health, refused when a time in it lies more than
/// [`super::MAX_WINDOW_MS`] ahead of `now_ms` (the past is harmless: a
/// record kept from a month ago is just old).
fn checked_health(
    call: &'static str,
    health: wit::ModelHealth,
    now_ms: u64,
) -> Result<ModelHealth, PolicyError> {
    let latest = now_ms.saturating_add(super::MAX_WINDOW_MS);
    let times = [
        ("last-hang-at", health.last_hang_at),
        ("slow-until", health.slow_until),
        ("trial-started-at", health.trial_started_at),
    ];
    if let Some((name, at)) = times
        .iter()
        .find_map(|(name, at)| at.filter(|at| *at > latest).map(|at| (name, at)))
    {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: format!("it set {name} to {at}, more than a week after {now_ms}"),
        });
    }
    Ok(ModelHealth {
        hangs: health.hangs,
        last_hang_at: health.last_hang_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    })
}

/// Host and contract sources, index for index (`SelectionSource::ALL` is in
/// the contract's order).
const SOURCES: [wit::SelectionSource; 7] = [
    wit::SelectionSource::ConfiguredDefault,
    wit::SelectionSource::AgentPrimary,
    wit::SelectionSource::AutoOverride,
    wit::SelectionSource::UserOverride,
    wit::SelectionSource::LegacyOverride,
    wit::SelectionSource::CronJob,
    wit::SelectionSource::Heartbeat,
];

fn source_to_wit(source: SelectionSource) -> wit::SelectionSource {
    let index = SelectionSource::ALL
        .iter()
        .position(|s| *s == source)
        .expect("ALL lists every source");
    SOURCES[index]
}

fn source_from_wit(source: wit::SelectionSource) -> SelectionSource {
    let index = SOURCES
        .iter()
        .position(|s| *s == source)
        .expect("SOURCES lists every source");
    SelectionSource::ALL[index]
}
