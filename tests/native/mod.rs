//! Runs the policy core natively on the same flattened input the component
//! gets. Shared by the integration tests and the benchmark (`#[path]`).

use failover::report::FlatReport;

/// The core's own input type for a flattened report.
pub fn to_core(report: &FlatReport) -> policy_guest::ErrorReport {
    policy_guest::ErrorReport {
        provider: report.provider.clone(),
        now_ms: report.now_ms,
        levels: report
            .levels
            .iter()
            .map(|level| policy_guest::ErrorLevel {
                depth: level.depth,
                status: level.status,
                code: level.code.clone(),
                message: level.message.clone(),
                headers: level.headers.clone(),
            })
            .collect(),
    }
}

/// Runs the policy core's profile functions natively on host types, so the
/// same cases can run natively and through the component.
#[allow(dead_code)] // The benchmark includes this file but uses only `to_core`.
pub mod profiles {
    use failover::auth::{
        CooldownConfig, CredentialKind, FailureEvent, OrderRequest, PinDecision, PinRequest,
        PinSource, RankedProfile, RecordedReason, StoredProfile, Usage,
    };
    use policy_guest::profiles as core;

    pub fn order_profiles(request: &OrderRequest) -> Vec<RankedProfile> {
        let request = core::OrderRequest {
            provider: request.provider.clone(),
            explicit_order: request.explicit_order.clone(),
            configured: request
                .configured
                .iter()
                .map(|c| core::ConfiguredProfile {
                    id: c.id.clone(),
                    provider: c.provider.clone(),
                    mode: c.mode.map(kind),
                })
                .collect(),
            stored: request.stored.iter().map(stored_to_core).collect(),
            model: request.model.clone(),
            now_ms: request.now_ms,
        };
        core::order_profiles(&request)
            .into_iter()
            .map(|r| RankedProfile {
                id: r.id,
                available: r.available,
                blocked_until: r.blocked_until,
            })
            .collect()
    }

    pub fn pin_profile(request: &PinRequest) -> PinDecision {
        let request = core::PinRequest {
            ranked: request.ranked.iter().map(ranked_to_core).collect(),
            current: request.current.clone(),
            source: request.source.map(|s| match s {
                PinSource::Auto => core::PinSource::Auto,
                PinSource::User => core::PinSource::User,
            }),
            pinned_at_compaction: request.pinned_at_compaction,
            compaction_count: request.compaction_count,
            session_reset: request.session_reset,
        };
        let decision = core::pin_profile(&request);
        PinDecision {
            profile: decision.profile,
            source: match decision.source {
                core::PinSource::Auto => PinSource::Auto,
                core::PinSource::User => PinSource::User,
            },
            compaction_count: decision.compaction_count,
        }
    }

    pub fn record_failure(usage: &Usage, event: &FailureEvent, config: &CooldownConfig) -> Usage {
        let event = core::FailureEvent {
            provider: event.provider.clone(),
            reason: reason_to_core(event.reason),
            model: event.model.clone(),
            retry_after_ms: event.retry_after_ms,
            reset_at_ms: event.reset_at_ms,
            now_ms: event.now_ms,
        };
        let config = core::CooldownConfig {
            billing_backoff_ms: config.billing_backoff_ms,
            billing_backoff_ms_by_provider: config.billing_backoff_ms_by_provider.clone(),
            billing_max_ms: config.billing_max_ms,
            failure_window_ms: config.failure_window_ms,
        };
        usage_from_core(core::record_failure(&usage_to_core(usage), &event, &config))
    }

    pub fn record_success(usage: &Usage, model: Option<&str>, now_ms: u64) -> Usage {
        usage_from_core(core::record_success(&usage_to_core(usage), model, now_ms))
    }

    pub fn stored_to_core(p: &StoredProfile) -> core::StoredProfile {
        core::StoredProfile {
            id: p.id.clone(),
            provider: p.provider.clone(),
            kind: kind(p.kind),
            expires: p.expires,
            refreshable: p.refreshable,
            usage: usage_to_core(&p.usage),
        }
    }

    pub fn ranked_to_core(r: &RankedProfile) -> core::RankedProfile {
        core::RankedProfile {
            id: r.id.clone(),
            available: r.available,
            blocked_until: r.blocked_until,
        }
    }

    fn kind(kind: CredentialKind) -> core::CredentialKind {
        match kind {
            CredentialKind::OAuth => core::CredentialKind::OAuth,
            CredentialKind::Token => core::CredentialKind::Token,
            CredentialKind::ApiKey => core::CredentialKind::ApiKey,
        }
    }

    const CORE_REASONS: [core::RecordedReason; 11] = [
        core::RecordedReason::RateLimit,
        core::RecordedReason::Overloaded,
        core::RecordedReason::Billing,
        core::RecordedReason::Auth,
        core::RecordedReason::AuthPermanent,
        core::RecordedReason::Timeout,
        core::RecordedReason::Format,
        core::RecordedReason::ModelNotFound,
        core::RecordedReason::SessionExpired,
        core::RecordedReason::ContextOverflow,
        core::RecordedReason::Unknown,
    ];

    pub fn reason_to_core(reason: RecordedReason) -> core::RecordedReason {
        let index = RecordedReason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap();
        CORE_REASONS[index]
    }

    pub fn reason_from_core(reason: core::RecordedReason) -> RecordedReason {
        let index = CORE_REASONS.iter().position(|r| *r == reason).unwrap();
        RecordedReason::ALL[index]
    }

    fn usage_to_core(u: &Usage) -> core::Usage {
        core::Usage {
            last_used: u.last_used,
            cooldown_until: u.cooldown_until,
            cooldown_reason: u.cooldown_reason.map(reason_to_core),
            cooldown_model: u.cooldown_model.clone(),
            disabled_until: u.disabled_until,
            disabled_reason: u.disabled_reason.map(reason_to_core),
            error_count: u.error_count,
            failure_counts: u
                .failure_counts
                .iter()
                .map(|(r, n)| (reason_to_core(*r), *n))
                .collect(),
            last_failure_at: u.last_failure_at,
        }
    }

    fn usage_from_core(u: core::Usage) -> Usage {
        Usage {
            last_used: u.last_used,
            cooldown_until: u.cooldown_until,
            cooldown_reason: u.cooldown_reason.map(reason_from_core),
            cooldown_model: u.cooldown_model,
            disabled_until: u.disabled_until,
            disabled_reason: u.disabled_reason.map(reason_from_core),
            error_count: u.error_count,
            failure_counts: u
                .failure_counts
                .into_iter()
                .map(|(r, n)| (reason_from_core(r), n))
                .collect(),
            last_failure_at: u.last_failure_at,
        }
    }
}

/// Runs the policy core's runner functions natively on host types.
#[allow(dead_code)] // The benchmark includes this file but uses only `to_core`.
pub mod runner {
    use failover::runner::{
        CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, FallbackChain, Gate,
        GateDecision, ModelHealth, OverrideSource, RotationConfig, RunStep, RunSummary, Selection,
        SelectionRequest, SelectionSource, StopReason, SummaryRequest,
    };
    use policy_guest::runner as core;

    use super::profiles::{ranked_to_core, reason_from_core, reason_to_core, stored_to_core};

    const SOURCES: [core::SelectionSource; 7] = [
        core::SelectionSource::ConfiguredDefault,
        core::SelectionSource::AgentPrimary,
        core::SelectionSource::AutoOverride,
        core::SelectionSource::UserOverride,
        core::SelectionSource::LegacyOverride,
        core::SelectionSource::CronJob,
        core::SelectionSource::Heartbeat,
    ];

    fn source_to_core(source: SelectionSource) -> core::SelectionSource {
        SOURCES[SelectionSource::ALL
            .iter()
            .position(|s| *s == source)
            .unwrap()]
    }

    fn source_from_core(source: core::SelectionSource) -> SelectionSource {
        SelectionSource::ALL[SOURCES.iter().position(|s| *s == source).unwrap()]
    }

    pub fn resolve_selection(request: &SelectionRequest) -> Selection {
        let selection = core::resolve_selection(&core::SelectionRequest {
            configured_primary: request.configured_primary.clone(),
            agent_primary: request.agent_primary.clone(),
            cron_model: request.cron_model.clone(),
            heartbeat: request.heartbeat,
            heartbeat_model: request.heartbeat_model.clone(),
            session_override: request
                .session_override
                .as_ref()
                .map(|o| core::SessionOverride {
                    model: o.model.clone(),
                    user: o.source.map(|s| s == OverrideSource::User),
                    origin: o.origin.clone(),
                }),
            primary_probe_interval_ms: request.primary_probe_interval_ms,
            last_primary_probe_at: request.last_primary_probe_at,
            now_ms: request.now_ms,
        });
        Selection {
            model: selection.model,
            source: source_from_core(selection.source),
            clear_override: selection.clear_override,
            probe_primary: selection.probe_primary,
        }
    }

    pub fn candidate_chain(request: &ChainRequest) -> FallbackChain {
        let chain = core::candidate_chain(&core::ChainRequest {
            requested: request.requested.clone(),
            source: source_to_core(request.source),
            configured_primary: request.configured_primary.clone(),
            configured_fallbacks: request.configured_fallbacks.clone(),
            source_fallbacks: request.source_fallbacks.clone(),
            fallbacks_override: request.fallbacks_override.clone(),
        });
        FallbackChain {
            candidates: chain.candidates,
            strict: chain.strict,
        }
    }

    pub fn decide_candidate(request: &CandidateRequest) -> CandidateDecision {
        let decision = core::decide_candidate(&core::CandidateRequest {
            primary: request.primary,
            sibling: request.sibling,
            ranked: request.ranked.iter().map(ranked_to_core).collect(),
            blocks: request
                .blocks
                .iter()
                .map(|b| core::Block {
                    profile: b.profile.clone(),
                    reason: reason_to_core(b.reason),
                    until: b.until,
                })
                .collect(),
            last_probe_at: request.last_probe_at,
            transient_probe_used: request.transient_probe_used,
            has_fallbacks: request.has_fallbacks,
            now_ms: request.now_ms,
        });
        match decision {
            core::CandidateDecision::Attempt(p) => CandidateDecision::Attempt(p),
            core::CandidateDecision::Probe { profile, transient } => {
                CandidateDecision::Probe { profile, transient }
            }
            core::CandidateDecision::Skip(r) => CandidateDecision::Skip(reason_from_core(r)),
        }
    }

    pub fn next_step(attempt: &FailedAttempt, config: &RotationConfig) -> RunStep {
        let step = core::next_step(
            &core::FailedAttempt {
                reason: reason_to_core(attempt.reason),
                aborted: attempt.aborted,
                live_switch_to: attempt.live_switch_to.clone(),
                user_pinned_profile: attempt.user_pinned_profile,
                rotations: attempt.rotations,
                profiles_left: attempt.profiles_left,
                chain: attempt.chain.clone(),
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

    fn health_to_core(health: &ModelHealth) -> core::ModelHealth {
        core::ModelHealth {
            hangs: health.hangs,
            last_hang_at: health.last_hang_at,
            slow_until: health.slow_until,
            trial_started_at: health.trial_started_at,
        }
    }

    fn health_from_core(health: core::ModelHealth) -> ModelHealth {
        ModelHealth {
            hangs: health.hangs,
            last_hang_at: health.last_hang_at,
            slow_until: health.slow_until,
            trial_started_at: health.trial_started_at,
        }
    }

    pub fn model_gate(health: &ModelHealth, others_remain: bool, now_ms: u64) -> GateDecision {
        let (gate, health) = core::model_gate(&health_to_core(health), others_remain, now_ms);
        GateDecision {
            gate: match gate {
                core::Gate::Open => Gate::Open,
                core::Gate::Trial => Gate::Trial,
                core::Gate::Skip => Gate::Skip,
            },
            health: health_from_core(health),
        }
    }

    pub fn record_attempt_end(health: &ModelHealth, hung: bool, now_ms: u64) -> ModelHealth {
        health_from_core(core::record_attempt_end(
            &health_to_core(health),
            hung,
            now_ms,
        ))
    }

    pub fn summarise(request: &SummaryRequest) -> RunSummary {
        let attempts: Vec<core::AttemptRecord> = request
            .attempts
            .iter()
            .map(|a| core::AttemptRecord {
                model: a.model.clone(),
                provider: a.provider.clone(),
                reason: reason_to_core(a.reason),
            })
            .collect();
        let profiles: Vec<_> = request.profiles.iter().map(stored_to_core).collect();
        let summary = core::summarise(&attempts, &profiles, request.now_ms);
        RunSummary {
            common_reason: summary.common_reason.map(reason_from_core),
            ready_at: summary.ready_at,
        }
    }
}
