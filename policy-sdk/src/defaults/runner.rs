//! The default run decisions on the contract's types: where a run starts
//! and may go (§3, F-7.3, F-7.6), each candidate (§8, F-12.3), the step
//! after a failure (F-7.4, F-7.5, F-6.7) and the summary (F-10.3, F-10.4).

use policy_types as core;

use super::convert::{
    blocks_to_core, ranked_to_core, reason_to_core, recorded_from_core, selection_source_from_core,
    selection_source_to_core, stored_to_core,
};
use crate::types::{
    AttemptEnd, AttemptRecord, CandidateDecision, CandidateRequest, FailedAttempt, FailureReason,
    ModelHealth, PinSource, RotationConfig, RunPlan, RunRequest, RunStep, RunSummary,
    SelectionSource, StopReason, StoredProfile,
};

/// The default plan: a model the caller named is the user's and strict
/// unless the caller gave fallbacks with it (F-7.6); otherwise the session's
/// override, the agent's, a cron job's or the configured model, in the
/// order of §3. The chain follows from the selection (F-7.3). Context
/// overflow never falls back here (F-5.9), so `overflow-to` is not read.
pub fn plan_run(request: RunRequest) -> RunPlan {
    let selection = select(&request);
    let Some(first) = selection.model else {
        return RunPlan {
            candidates: Vec::new(),
            source: selection_source_from_core(selection.source),
            strict: false,
            clear_override: selection.clear_override,
            probe_primary: false,
        };
    };
    let source_fallbacks = match selection.source {
        core::SelectionSource::AgentPrimary => request.agent_fallbacks,
        core::SelectionSource::CronJob => request.cron_fallbacks,
        _ => None,
    };
    let chain = policy_guest::runner::candidate_chain(&core::ChainRequest {
        requested: first,
        source: selection.source,
        configured_primary: request.configured_primary,
        configured_fallbacks: request.configured_fallbacks,
        source_fallbacks,
        fallbacks_override: request.fallbacks_override,
    });
    RunPlan {
        candidates: chain.candidates,
        source: selection_source_from_core(selection.source),
        strict: chain.strict,
        clear_override: selection.clear_override,
        probe_primary: selection.probe_primary,
    }
}

/// The model a run starts with, and why.
fn select(request: &RunRequest) -> core::Selection {
    if let Some(model) = &request.requested {
        let source = match request.fallbacks_override {
            Some(_) => SelectionSource::ConfiguredDefault,
            None => SelectionSource::UserOverride,
        };
        return core::Selection {
            model: Some(model.clone()),
            source: selection_source_to_core(source),
            clear_override: false,
            probe_primary: false,
        };
    }
    let session = request.session_override.as_ref();
    policy_guest::runner::resolve_selection(&core::SelectionRequest {
        configured_primary: request.configured_primary.clone(),
        agent_primary: request.agent_primary.clone(),
        cron_model: request.cron_model.clone(),
        heartbeat: request.heartbeat,
        heartbeat_model: request.heartbeat_model.clone(),
        session_override: session.map(|o| core::SessionOverride {
            model: o.model.clone(),
            source: o.source.map(|s| match s {
                PinSource::Auto => core::OverrideSource::Auto,
                PinSource::User => core::OverrideSource::User,
            }),
            origin: o.origin.clone(),
        }),
        primary_probe_interval_ms: request.primary_probe_interval_ms,
        last_primary_probe_at: session.and_then(|o| o.last_primary_probe_at),
        now_ms: session.map_or(0, |o| o.now_ms),
    })
}

/// The default decision on a candidate: a slow model is skipped while
/// later candidates remain, and tried as a trial once its slow spell is
/// over (F-12.3); then its profiles are attempted, one blocked profile
/// probed, or the candidate skipped (§8).
pub fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
    let (gate, _) = policy_guest::runner::model_gate(
        &health_to_core(request.health),
        request.later_candidates,
        request.now_ms,
    );
    if gate == core::Gate::Skip {
        return CandidateDecision::Skip(FailureReason::Timeout);
    }
    let decision = policy_guest::runner::decide_candidate(&core::CandidateRequest {
        primary: request.primary,
        sibling: request.sibling,
        ranked: request.ranked.iter().map(ranked_to_core).collect(),
        blocks: blocks_to_core(&request.ranked),
        last_probe_at: request.last_probe_at,
        transient_probe_used: request.transient_probe_used,
        has_fallbacks: request.later_candidates,
        now_ms: request.now_ms,
    });
    match decision {
        core::CandidateDecision::Attempt(ids) if gate == core::Gate::Trial => {
            CandidateDecision::Trial(ids)
        }
        core::CandidateDecision::Attempt(ids) => CandidateDecision::Attempt(ids),
        core::CandidateDecision::Probe { profile, transient } if transient => {
            CandidateDecision::TransientProbe(profile)
        }
        core::CandidateDecision::Probe { profile, .. } => CandidateDecision::Probe(profile),
        core::CandidateDecision::Skip(reason) => {
            CandidateDecision::Skip(recorded_from_core(reason))
        }
    }
}

/// The default health after an attempt: a hang or a server error is a
/// strike (F-12.3, F-12.7); enough strikes in a row make the model slow
/// for a while; an answer clears them.
pub fn record_model_attempt(health: ModelHealth, end: AttemptEnd, now_ms: u64) -> ModelHealth {
    let strike = !matches!(end, AttemptEnd::Answered);
    let after = policy_guest::runner::record_attempt_end(&health_to_core(health), strike, now_ms);
    ModelHealth {
        strikes: after.hangs,
        last_strike_at: after.last_hang_at,
        slow_until: after.slow_until,
        trial_started_at: after.trial_started_at,
    }
}

fn health_to_core(health: ModelHealth) -> core::ModelHealth {
    core::ModelHealth {
        hangs: health.strikes,
        last_hang_at: health.last_strike_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

/// The default step after a failure: rotate the profile within the caps
/// of `auth.cooldowns.*`, then the next candidate; stop where a fallback
/// cannot help (F-7.5, F-7.5a, F-5.9). No wait is longer than
/// `wait-cap-ms`.
pub fn next_step(attempt: FailedAttempt, config: RotationConfig) -> RunStep {
    let step = policy_guest::runner::next_step(
        &core::FailedAttempt {
            reason: reason_to_core(attempt.reason),
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
        core::RunStep::RotateProfile(wait_ms) => {
            RunStep::RotateProfile(wait_ms.min(config.wait_cap_ms))
        }
        core::RunStep::Candidate(position) => RunStep::Candidate(position),
        core::RunStep::Stop(reason) => RunStep::Stop(match reason {
            core::StopReason::Aborted => StopReason::Aborted,
            core::StopReason::ContextOverflow => StopReason::ContextOverflow,
            core::StopReason::Format => StopReason::Format,
            core::StopReason::SessionExpired => StopReason::SessionExpired,
            core::StopReason::Exhausted => StopReason::Exhausted,
        }),
    }
}

/// The default summary: the reason every attempt shared, and when the
/// soonest of the attempted models is usable again.
pub fn summarise(
    attempts: Vec<AttemptRecord>,
    profiles: Vec<StoredProfile>,
    now_ms: u64,
) -> RunSummary {
    let attempts: Vec<core::AttemptRecord> = attempts
        .into_iter()
        .map(|a| core::AttemptRecord {
            model: a.model,
            provider: a.provider,
            reason: reason_to_core(a.reason),
        })
        .collect();
    let profiles: Vec<core::StoredProfile> =
        profiles.iter().map(|p| stored_to_core(p, None)).collect();
    let summary = policy_guest::runner::summarise(&attempts, &profiles, now_ms);
    RunSummary {
        common_reason: summary.common_reason.map(recorded_from_core),
        ready_at: summary.ready_at,
    }
}
