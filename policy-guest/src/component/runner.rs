//! Glue for the `runner` interface.

use super::exports::failover::policy::types::{
    CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, FallbackChain, Gate,
    GateDecision, ModelHealth, OverrideSource, Probe, RotationConfig, RunStep, RunSummary,
    Selection, SelectionRequest, SelectionSource, StopReason, SummaryRequest,
};
use super::profiles::{ranked_from_wit, recorded_from_wit, recorded_to_wit, stored_from_wit};
use super::{exports, DefaultPolicy};
use crate::runner as core;

impl exports::failover::policy::runner::Guest for DefaultPolicy {
    fn resolve_selection(request: SelectionRequest) -> Selection {
        let request = core::SelectionRequest {
            configured_primary: request.configured_primary,
            agent_primary: request.agent_primary,
            cron_model: request.cron_model,
            heartbeat: request.heartbeat,
            heartbeat_model: request.heartbeat_model,
            session_override: request.session_override.map(|o| core::SessionOverride {
                model: o.model,
                user: o.source.map(|s| s == OverrideSource::User),
                origin: o.origin,
            }),
            primary_probe_interval_ms: request.primary_probe_interval_ms,
            last_primary_probe_at: request.last_primary_probe_at,
            now_ms: request.now_ms,
        };
        let selection = core::resolve_selection(&request);
        Selection {
            model: selection.model,
            source: source_to_wit(selection.source),
            clear_override: selection.clear_override,
            probe_primary: selection.probe_primary,
        }
    }

    fn candidate_chain(request: ChainRequest) -> FallbackChain {
        let chain = core::candidate_chain(&core::ChainRequest {
            requested: request.requested,
            source: source_from_wit(request.source),
            configured_primary: request.configured_primary,
            configured_fallbacks: request.configured_fallbacks,
            source_fallbacks: request.source_fallbacks,
            fallbacks_override: request.fallbacks_override,
        });
        FallbackChain {
            candidates: chain.candidates,
            strict: chain.strict,
        }
    }

    fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
        let decision = core::decide_candidate(&core::CandidateRequest {
            primary: request.primary,
            sibling: request.sibling,
            ranked: request.ranked.into_iter().map(ranked_from_wit).collect(),
            blocks: request
                .blocks
                .into_iter()
                .map(|b| core::Block {
                    profile: b.profile,
                    reason: recorded_from_wit(b.reason),
                    until: b.until,
                })
                .collect(),
            last_probe_at: request.last_probe_at,
            transient_probe_used: request.transient_probe_used,
            has_fallbacks: request.has_fallbacks,
            now_ms: request.now_ms,
        });
        match decision {
            core::CandidateDecision::Attempt(profiles) => CandidateDecision::Attempt(profiles),
            core::CandidateDecision::Probe { profile, transient } => {
                CandidateDecision::Probe(Probe { profile, transient })
            }
            core::CandidateDecision::Skip(reason) => {
                CandidateDecision::Skip(recorded_to_wit(reason))
            }
        }
    }

    fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
        let step = core::next_step(
            &core::FailedAttempt {
                reason: recorded_from_wit(attempt.reason),
                aborted: attempt.aborted,
                live_switch_to: attempt.live_switch_to,
                user_pinned_profile: attempt.user_pinned_profile,
                rotations: attempt.rotations,
                profiles_left: attempt.profiles_left,
                chain: attempt.chain,
                position: attempt.position,
            },
            &core::RotationConfig {
                rate_limited_profile_rotations: config.rate_limited_profile_rotations,
                overloaded_profile_rotations: config.overloaded_profile_rotations,
                overloaded_backoff_ms: config.overloaded_backoff_ms,
            },
        );
        match step {
            core::NextStep::RotateProfile { wait_ms } => RunStep::RotateProfile(wait_ms),
            core::NextStep::Candidate { position } => RunStep::Candidate(position),
            core::NextStep::Stop(reason) => RunStep::Stop(match reason {
                core::StopReason::Aborted => StopReason::Aborted,
                core::StopReason::ContextOverflow => StopReason::ContextOverflow,
                core::StopReason::Format => StopReason::Format,
                core::StopReason::SessionExpired => StopReason::SessionExpired,
                core::StopReason::Exhausted => StopReason::Exhausted,
            }),
        }
    }

    fn model_gate(health: ModelHealth, others_remain: bool, now_ms: u64) -> GateDecision {
        let (gate, health) = core::model_gate(&health_from_wit(health), others_remain, now_ms);
        GateDecision {
            gate: match gate {
                core::Gate::Open => Gate::Open,
                core::Gate::Trial => Gate::Trial,
                core::Gate::Skip => Gate::Skip,
            },
            health: health_to_wit(health),
        }
    }

    fn record_attempt_end(health: ModelHealth, hung: bool, now_ms: u64) -> ModelHealth {
        health_to_wit(core::record_attempt_end(
            &health_from_wit(health),
            hung,
            now_ms,
        ))
    }

    fn summarise(request: SummaryRequest) -> RunSummary {
        let attempts: Vec<core::AttemptRecord> = request
            .attempts
            .into_iter()
            .map(|a| core::AttemptRecord {
                model: a.model,
                provider: a.provider,
                reason: recorded_from_wit(a.reason),
            })
            .collect();
        let profiles: Vec<_> = request.profiles.into_iter().map(stored_from_wit).collect();
        let summary = core::summarise(&attempts, &profiles, request.now_ms);
        RunSummary {
            common_reason: summary.common_reason.map(recorded_to_wit),
            ready_at: summary.ready_at,
        }
    }
}

fn health_from_wit(health: ModelHealth) -> core::ModelHealth {
    core::ModelHealth {
        hangs: health.hangs,
        last_hang_at: health.last_hang_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

fn health_to_wit(health: core::ModelHealth) -> ModelHealth {
    ModelHealth {
        hangs: health.hangs,
        last_hang_at: health.last_hang_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

/// Selection sources in the contract's order, index for index with the core's.
const SOURCES: [(SelectionSource, core::SelectionSource); 7] = [
    (
        SelectionSource::ConfiguredDefault,
        core::SelectionSource::ConfiguredDefault,
    ),
    (
        SelectionSource::AgentPrimary,
        core::SelectionSource::AgentPrimary,
    ),
    (
        SelectionSource::AutoOverride,
        core::SelectionSource::AutoOverride,
    ),
    (
        SelectionSource::UserOverride,
        core::SelectionSource::UserOverride,
    ),
    (
        SelectionSource::LegacyOverride,
        core::SelectionSource::LegacyOverride,
    ),
    (SelectionSource::CronJob, core::SelectionSource::CronJob),
    (SelectionSource::Heartbeat, core::SelectionSource::Heartbeat),
];

fn source_from_wit(source: SelectionSource) -> core::SelectionSource {
    SOURCES[source as usize].1
}

fn source_to_wit(source: core::SelectionSource) -> SelectionSource {
    SOURCES
        .iter()
        .find(|(_, s)| *s == source)
        .map_or(SelectionSource::ConfiguredDefault, |(w, _)| *w)
}
