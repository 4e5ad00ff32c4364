//! The default run decisions on the contract's types: where a run starts
//! and may go (§3, F-7.3, F-7.6), each candidate (§8, F-12.3), the step
//! after a failure (F-7.4, F-7.5, F-6.7) and the summary (F-10.3, F-10.4).

use policy_types as core;

use super::convert::{
    blocks_to_core, ranked_to_core, reason_to_core, recorded_from_core, selection_source_from_core,
    stored_to_core,
};
use crate::types::{
    AttemptEnd, AttemptRecord, CandidateDecision, CandidateRequest, FailedAttempt, ModelHealth,
    PinSource, RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, StopReason, StoredProfile,
};

/// The default plan: a model the caller named is the user's and strict
/// unless the caller gave fallbacks with it (F-7.6); otherwise the session's
/// override, the agent's, a cron job's or the configured model, in the
/// order of §3. The chain follows from the selection (F-7.3), and one that
/// may fall back ends with the larger models configured for its
/// candidates' context overflows (`overflow-to`).
pub fn plan_run(request: RunRequest) -> RunPlan {
    let session = request.session_override;
    let plan = policy_guest::runner::plan_run(&core::RunRequest {
        requested: request.requested,
        configured_primary: request.configured_primary,
        configured_fallbacks: request.configured_fallbacks,
        agent_primary: request.agent_primary,
        agent_fallbacks: request.agent_fallbacks,
        cron_model: request.cron_model,
        cron_fallbacks: request.cron_fallbacks,
        heartbeat: request.heartbeat,
        heartbeat_model: request.heartbeat_model,
        last_primary_probe_at: session.as_ref().and_then(|o| o.last_primary_probe_at),
        now_ms: session.as_ref().map_or(0, |o| o.now_ms),
        session_override: session.map(|o| core::SessionOverride {
            model: o.model,
            source: o.source.map(|s| match s {
                PinSource::Auto => core::OverrideSource::Auto,
                PinSource::User => core::OverrideSource::User,
            }),
            origin: o.origin,
        }),
        fallbacks_override: request.fallbacks_override,
        overflow_to: request.overflow_to,
        primary_probe_interval_ms: request.primary_probe_interval_ms,
    });
    RunPlan {
        candidates: plan.candidates,
        source: selection_source_from_core(plan.source),
        strict: plan.strict,
        clear_override: plan.clear_override,
        probe_primary: plan.probe_primary,
    }
}

/// The default decision on a candidate: a slow model is skipped while
/// later candidates remain, and tried as a trial once its slow spell is
/// over (F-12.3); then its profiles are attempted, one blocked profile
/// probed, or the candidate skipped (§8).
pub fn decide_candidate(request: CandidateRequest) -> CandidateDecision {
    let decision = policy_guest::runner::decide_candidate(&core::CandidateRequest {
        model: request.model,
        primary: request.primary,
        sibling: request.sibling,
        ranked: request.ranked.iter().map(ranked_to_core).collect(),
        blocks: blocks_to_core(&request.ranked),
        last_probe_at: request.last_probe_at,
        transient_probe_used: request.transient_probe_used,
        later_candidates: request.later_candidates,
        health: health_to_core(request.health),
        now_ms: request.now_ms,
    });
    match decision {
        core::CandidateDecision::Attempt(ids) => CandidateDecision::Attempt(ids),
        core::CandidateDecision::Trial(ids) => CandidateDecision::Trial(ids),
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
    let end = match end {
        AttemptEnd::Answered => core::AttemptEnd::Answered,
        AttemptEnd::Hung => core::AttemptEnd::Hung,
        AttemptEnd::ServerError => core::AttemptEnd::ServerError,
    };
    let after = policy_guest::runner::record_model_attempt(&health_to_core(health), end, now_ms);
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
            retry_after_ms: attempt.retry_after_ms,
            aborted: attempt.aborted,
            hung: attempt.hung,
            live_switch_to: attempt.live_switch_to,
            user_pinned_profile: attempt.user_pinned_profile,
            rotations: attempt.rotations,
            profiles_left: attempt.profiles_left,
            chain: attempt.chain,
            position: attempt.position,
            overflow_to: attempt.overflow_to,
        },
        &core::RotationConfig {
            rate_limited_profile_rotations: config.rate_limited_profile_rotations,
            overloaded_profile_rotations: config.overloaded_profile_rotations,
            overloaded_backoff_ms: config.overloaded_backoff_ms,
            wait_cap_ms: config.wait_cap_ms,
        },
    );
    match step {
        core::RunStep::RotateProfile(wait_ms) => RunStep::RotateProfile(wait_ms),
        core::RunStep::WaitAndRetry(wait_ms) => RunStep::WaitAndRetry(wait_ms),
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
    let profiles: Vec<core::StoredProfile> = profiles.iter().map(stored_to_core).collect();
    let summary = policy_guest::runner::summarise(&attempts, &profiles, now_ms);
    RunSummary {
        common_reason: summary.common_reason.map(recorded_from_core),
        ready_at: summary.ready_at,
    }
}
