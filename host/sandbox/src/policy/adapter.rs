//! Between the host's types (`policy-types`) and contract 1.0's, both
//! ways. The host keeps less than the contract can say in two places, and
//! the conversions here say what it keeps:
//!
//! - Usage: the host counts failures by reason of every model, and apart
//!   those that concerned one model; the contract lists the rest as the
//!   profile's.
//! - A verdict's `reset-at-ms` has no place in the host's classification.

use policy_types::{self as host, RecordedReason};

use super::bindings::v1::{profiles, runner, wit};
use failover_policy::report::BorrowedReport;

/// A reason in the contract's terms.
pub(crate) fn reason(reason: RecordedReason) -> wit::FailureReason {
    use wit::FailureReason as W;
    match reason {
        RecordedReason::RateLimit => W::RateLimit,
        RecordedReason::Overloaded => W::Overloaded,
        RecordedReason::Billing => W::Billing,
        RecordedReason::Auth => W::Auth,
        RecordedReason::AuthPermanent => W::AuthPermanent,
        RecordedReason::Timeout => W::Timeout,
        RecordedReason::ServerError => W::ServerError,
        RecordedReason::TlsCertificate => W::TlsCertificate,
        RecordedReason::Format => W::Format,
        RecordedReason::ModelNotFound => W::ModelNotFound,
        RecordedReason::SessionExpired => W::SessionExpired,
        RecordedReason::ContextOverflow => W::ContextOverflow,
        RecordedReason::Unknown => W::Unknown,
    }
}

/// A contract reason as the host records it.
pub(crate) fn recorded(reason: wit::FailureReason) -> RecordedReason {
    use wit::FailureReason as W;
    match reason {
        W::RateLimit => RecordedReason::RateLimit,
        W::Overloaded => RecordedReason::Overloaded,
        W::Billing => RecordedReason::Billing,
        W::Auth => RecordedReason::Auth,
        W::AuthPermanent => RecordedReason::AuthPermanent,
        W::Timeout => RecordedReason::Timeout,
        W::ServerError => RecordedReason::ServerError,
        W::TlsCertificate => RecordedReason::TlsCertificate,
        W::Format => RecordedReason::Format,
        W::ModelNotFound => RecordedReason::ModelNotFound,
        W::SessionExpired => RecordedReason::SessionExpired,
        W::ContextOverflow => RecordedReason::ContextOverflow,
        W::Unknown => RecordedReason::Unknown,
    }
}

/// A module's verdict in the host's terms: the chain advances on the
/// reasons that advance it.
pub(crate) fn classification(verdict: wit::Classification) -> host::Classification {
    let reason = host::Reason::ALL
        .into_iter()
        .find(|r| RecordedReason::from(Some(*r)) == recorded(verdict.reason));
    host::Classification {
        reason,
        failover: reason.is_some_and(host::Reason::advances_chain),
        detail: verdict.detail.map(|d| match d {
            wit::FailureDetail::EmptyResponse => host::Detail::EmptyResponse,
            wit::FailureDetail::NoErrorDetails => host::Detail::NoErrorDetails,
            wit::FailureDetail::Unclassified => host::Detail::Unclassified,
        }),
        retry_after_ms: verdict.retry_after_ms,
    }
}

/// A host verdict in the contract's terms.
pub(crate) fn verdict(classification: &host::Classification) -> wit::Classification {
    wit::Classification {
        reason: reason(RecordedReason::from(classification.reason)),
        detail: classification.detail.map(|d| match d {
            host::Detail::EmptyResponse => wit::FailureDetail::EmptyResponse,
            host::Detail::NoErrorDetails => wit::FailureDetail::NoErrorDetails,
            host::Detail::Unclassified => wit::FailureDetail::Unclassified,
        }),
        retry_after_ms: classification.retry_after_ms,
        reset_at_ms: None,
    }
}

fn kind(kind: host::CredentialKind) -> wit::CredentialKind {
    match kind {
        host::CredentialKind::OAuth => wit::CredentialKind::Oauth,
        host::CredentialKind::Token => wit::CredentialKind::Token,
        host::CredentialKind::ApiKey => wit::CredentialKind::ApiKey,
    }
}

pub(crate) fn pin_source(source: host::PinSource) -> wit::PinSource {
    match source {
        host::PinSource::Auto => wit::PinSource::Auto,
        host::PinSource::User => wit::PinSource::User,
    }
}

pub(crate) fn host_pin_source(source: wit::PinSource) -> host::PinSource {
    match source {
        wit::PinSource::Auto => host::PinSource::Auto,
        wit::PinSource::User => host::PinSource::User,
    }
}

/// A profile's usage in the contract's terms.
pub(crate) fn usage(usage: &host::Usage) -> wit::Usage {
    wit::Usage {
        last_used: usage.last_used,
        cooldown_until: usage.cooldown_until,
        cooldown_reason: usage.cooldown_reason.map(reason),
        model_cooldowns: (usage.model_cooldowns.iter())
            .map(|c| wit::ModelCooldown {
                model: c.model.clone(),
                until: c.until,
                reason: reason(c.reason),
            })
            .collect(),
        disabled_until: usage.disabled_until,
        disabled_reason: usage.disabled_reason.map(reason),
        error_count: usage.error_count,
        failure_counts: (usage.listed_counts())
            .map(|(r, model, count)| wit::FailureCount {
                reason: reason(r),
                model: model.map(str::to_owned),
                count,
            })
            .collect(),
        last_failure_at: usage.last_failure_at,
    }
}

/// A module's usage in the host's terms (see the module docs).
pub(crate) fn host_usage(usage: wit::Usage) -> host::Usage {
    let (failure_counts, model_failure_counts) = host::counts_from_listed(
        (usage.failure_counts.into_iter())
            .map(|entry| (recorded(entry.reason), entry.model, entry.count)),
    );
    host::Usage {
        last_used: usage.last_used,
        cooldown_until: usage.cooldown_until,
        cooldown_reason: usage.cooldown_reason.map(recorded),
        model_cooldowns: (usage.model_cooldowns.into_iter())
            .map(|c| host::ModelCooldown {
                model: c.model,
                until: c.until,
                reason: recorded(c.reason),
            })
            .collect(),
        disabled_until: usage.disabled_until,
        disabled_reason: usage.disabled_reason.map(recorded),
        error_count: usage.error_count,
        failure_counts,
        model_failure_counts,
        last_failure_at: usage.last_failure_at,
    }
}

pub(crate) fn stored(profile: &host::StoredProfile) -> wit::StoredProfile {
    wit::StoredProfile {
        id: profile.id.clone(),
        provider: profile.provider.clone(),
        kind: kind(profile.kind),
        expires: profile.expires,
        refreshable: profile.refreshable,
        usage: usage(&profile.usage),
    }
}

pub(crate) fn order_request(request: &host::OrderRequest) -> profiles::OrderRequest {
    profiles::OrderRequest {
        provider: request.provider.clone(),
        explicit_order: request.explicit_order.clone(),
        configured: (request.configured.iter())
            .map(|p| wit::ConfiguredProfile {
                id: p.id.clone(),
                provider: p.provider.clone(),
                mode: p.mode.map(kind),
            })
            .collect(),
        stored: request.stored.iter().map(stored).collect(),
        model: request.model.clone(),
        now_ms: request.now_ms,
    }
}

/// The host's order and why each blocked profile is blocked.
pub(crate) fn host_ranked(
    ranked: Vec<wit::RankedProfile>,
) -> (Vec<host::RankedProfile>, Vec<host::ProfileBlock>) {
    let blocks = (ranked.iter())
        .filter_map(|r| {
            let block = r.blocked.as_ref()?;
            Some(host::ProfileBlock {
                profile: r.id.clone(),
                reason: recorded(block.reason),
                until: block.until,
            })
        })
        .collect();
    let ranked = (ranked.into_iter())
        .map(|r| host::RankedProfile {
            available: r.blocked.is_none(),
            blocked_until: r.blocked.map(|b| b.until),
            id: r.id,
        })
        .collect();
    (ranked, blocks)
}

/// The host's order in the contract's terms: each blocked profile with the
/// reason `blocks` gives it (`unknown` without one) and the time it is free
/// (`now_ms` when none is known).
pub(crate) fn ranked(
    ranked: &[host::RankedProfile],
    blocks: &[host::ProfileBlock],
    now_ms: u64,
) -> Vec<wit::RankedProfile> {
    let by_id: std::collections::BTreeMap<&str, RecordedReason> = (blocks.iter())
        .map(|b| (b.profile.as_str(), b.reason))
        .collect();
    (ranked.iter())
        .map(|r| wit::RankedProfile {
            id: r.id.clone(),
            blocked: (!r.available).then(|| wit::Block {
                reason: reason(
                    (by_id.get(r.id.as_str()).copied()).unwrap_or(RecordedReason::Unknown),
                ),
                until: r.blocked_until.unwrap_or(now_ms),
            }),
        })
        .collect()
}

pub(crate) fn cooldown_config(config: &host::CooldownConfig) -> profiles::CooldownConfig {
    profiles::CooldownConfig {
        billing_backoff_ms: config.billing_backoff_ms,
        billing_backoff_ms_by_provider: config.billing_backoff_ms_by_provider.clone(),
        billing_max_ms: config.billing_max_ms,
        failure_window_ms: config.failure_window_ms,
    }
}

pub(crate) fn health(health: &host::ModelHealth) -> wit::ModelHealth {
    wit::ModelHealth {
        strikes: health.hangs,
        last_strike_at: health.last_hang_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

pub(crate) fn host_health(health: wit::ModelHealth) -> host::ModelHealth {
    host::ModelHealth {
        hangs: health.strikes,
        last_hang_at: health.last_strike_at,
        slow_until: health.slow_until,
        trial_started_at: health.trial_started_at,
    }
}

pub(crate) fn attempt_end(end: host::AttemptEnd) -> wit::AttemptEnd {
    match end {
        host::AttemptEnd::Answered => wit::AttemptEnd::Answered,
        host::AttemptEnd::Hung => wit::AttemptEnd::Hung,
        host::AttemptEnd::ServerError => wit::AttemptEnd::ServerError,
    }
}

pub(crate) fn run_request(request: &host::RunRequest) -> runner::RunRequest {
    let session = request.session_override.as_ref();
    runner::RunRequest {
        requested: request.requested.clone(),
        configured_primary: request.configured_primary.clone(),
        configured_fallbacks: request.configured_fallbacks.clone(),
        agent_primary: request.agent_primary.clone(),
        agent_fallbacks: request.agent_fallbacks.clone(),
        cron_model: request.cron_model.clone(),
        cron_fallbacks: request.cron_fallbacks.clone(),
        heartbeat: request.heartbeat,
        heartbeat_model: request.heartbeat_model.clone(),
        session_override: session.map(|o| wit::SessionOverride {
            model: o.model.clone(),
            source: o.source.map(|s| match s {
                host::OverrideSource::Auto => wit::PinSource::Auto,
                host::OverrideSource::User => wit::PinSource::User,
            }),
            origin: o.origin.clone(),
            last_primary_probe_at: request.last_primary_probe_at,
            now_ms: request.now_ms,
        }),
        fallbacks_override: request.fallbacks_override.clone(),
        overflow_to: request.overflow_to.clone(),
        primary_probe_interval_ms: request.primary_probe_interval_ms,
    }
}

pub(crate) fn selection_source(source: wit::SelectionSource) -> host::SelectionSource {
    use wit::SelectionSource as W;
    match source {
        W::ConfiguredDefault => host::SelectionSource::ConfiguredDefault,
        W::AgentPrimary => host::SelectionSource::AgentPrimary,
        W::AutoOverride => host::SelectionSource::AutoOverride,
        W::UserOverride => host::SelectionSource::UserOverride,
        W::LegacyOverride => host::SelectionSource::LegacyOverride,
        W::CronJob => host::SelectionSource::CronJob,
        W::Heartbeat => host::SelectionSource::Heartbeat,
    }
}

pub(crate) fn host_plan(plan: runner::RunPlan) -> host::RunPlan {
    host::RunPlan {
        candidates: plan.candidates,
        source: selection_source(plan.source),
        strict: plan.strict,
        clear_override: plan.clear_override,
        probe_primary: plan.probe_primary,
    }
}

pub(crate) fn candidate_request(
    model: &str,
    request: &host::CandidateRequest,
) -> runner::CandidateRequest {
    runner::CandidateRequest {
        model: model.to_owned(),
        primary: request.primary,
        sibling: request.sibling,
        later_candidates: request.later_candidates,
        ranked: ranked(&request.ranked, &request.blocks, request.now_ms),
        last_probe_at: request.last_probe_at,
        transient_probe_used: request.transient_probe_used,
        health: health(&request.health),
        now_ms: request.now_ms,
    }
}

pub(crate) fn host_decision(decision: runner::CandidateDecision) -> host::CandidateDecision {
    use runner::CandidateDecision as W;
    match decision {
        W::Attempt(ids) => host::CandidateDecision::Attempt(ids),
        W::Trial(ids) => host::CandidateDecision::Trial(ids),
        W::Probe(profile) => host::CandidateDecision::Probe {
            profile,
            transient: false,
        },
        W::TransientProbe(profile) => host::CandidateDecision::Probe {
            profile,
            transient: true,
        },
        W::Skip(why) => host::CandidateDecision::Skip(recorded(why)),
    }
}

pub(crate) fn failed_attempt(attempt: &host::FailedAttempt) -> wit::FailedAttempt {
    wit::FailedAttempt {
        reason: reason(attempt.reason),
        retry_after_ms: attempt.retry_after_ms,
        aborted: attempt.aborted,
        hung: attempt.hung,
        live_switch_to: attempt.live_switch_to.clone(),
        user_pinned_profile: attempt.user_pinned_profile,
        rotations: attempt.rotations,
        profiles_left: attempt.profiles_left,
        chain: attempt.chain.clone(),
        position: attempt.position,
        overflow_to: attempt.overflow_to.clone(),
    }
}

pub(crate) fn rotation_config(config: &host::RotationConfig) -> runner::RotationConfig {
    runner::RotationConfig {
        rate_limited_profile_rotations: config.rate_limited_profile_rotations,
        overloaded_profile_rotations: config.overloaded_profile_rotations,
        overloaded_backoff_ms: config.overloaded_backoff_ms,
        wait_cap_ms: config.wait_cap_ms,
    }
}

pub(crate) fn host_step(step: runner::RunStep) -> host::RunStep {
    use runner::RunStep as W;
    match step {
        W::RotateProfile(ms) => host::RunStep::RotateProfile(ms),
        W::WaitAndRetry(ms) => host::RunStep::WaitAndRetry(ms),
        W::Candidate(at) => host::RunStep::Candidate(at),
        W::Stop(why) => host::RunStep::Stop(match why {
            runner::StopReason::Aborted => host::StopReason::Aborted,
            runner::StopReason::ContextOverflow => host::StopReason::ContextOverflow,
            runner::StopReason::Format => host::StopReason::Format,
            runner::StopReason::SessionExpired => host::StopReason::SessionExpired,
            runner::StopReason::Exhausted => host::StopReason::Exhausted,
        }),
    }
}

pub(crate) fn attempt_records(attempts: &[host::AttemptRecord]) -> Vec<runner::AttemptRecord> {
    (attempts.iter())
        .map(|a| runner::AttemptRecord {
            model: a.model.clone(),
            provider: a.provider.clone(),
            reason: reason(a.reason),
        })
        .collect()
}

pub(crate) fn host_summary(summary: runner::RunSummary) -> host::RunSummary {
    host::RunSummary {
        common_reason: summary.common_reason.map(recorded),
        ready_at: summary.ready_at,
    }
}

pub(crate) fn pin_request(request: &host::PinRequest) -> profiles::PinRequest {
    profiles::PinRequest {
        ranked: ranked(&request.ranked, &[], 0),
        current: request.current.clone(),
        source: request.source.map(pin_source),
        pinned_at_compaction: request.pinned_at_compaction,
        compaction_count: request.compaction_count,
        session_reset: request.session_reset,
    }
}

pub(crate) fn host_pin(decision: profiles::PinDecision) -> host::PinDecision {
    host::PinDecision {
        profile: decision.profile,
        source: host_pin_source(decision.source),
        compaction_count: decision.compaction_count,
    }
}

/// A flattened error as `classify` takes it.
pub(crate) fn error_report(report: &BorrowedReport<'_>, now_ms: u64) -> wit::ErrorReport {
    wit::ErrorReport {
        provider: report.provider.map(str::to_owned),
        model: None,
        levels: (report.levels.iter())
            .map(|level| wit::ErrorLevel {
                depth: level.depth,
                status: level.status,
                code: level.code.map(str::to_owned),
                error_type: level.error_type.map(str::to_owned),
                param: level.param.map(str::to_owned),
                message: level.message.to_owned(),
                details: level.details.map(str::to_owned),
                headers: (level.headers.iter())
                    .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                    .collect(),
            })
            .collect(),
        now_ms,
    }
}

/// A report the host already holds (a replayed or hand-written one) as
/// `classify` takes it: its header block read back into pairs.
pub(crate) fn held_report(report: &host::ErrorReport) -> wit::ErrorReport {
    wit::ErrorReport {
        provider: report.provider.clone(),
        model: None,
        levels: (report.levels.iter())
            .map(|level| wit::ErrorLevel {
                depth: level.depth,
                status: level.status,
                code: level.code.clone(),
                error_type: level.error_type.clone(),
                param: level.param.clone(),
                message: level.message.clone(),
                details: level.details.clone(),
                headers: (level.headers.lines())
                    .filter_map(|line| line.split_once(':'))
                    .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
                    .collect(),
            })
            .collect(),
        now_ms: report.now_ms,
    }
}
