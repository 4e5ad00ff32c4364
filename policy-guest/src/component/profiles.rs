//! Glue for the `profiles` interface, and the conversions the `runner`
//! glue shares.

use super::exports::failover::policy::types::{
    CooldownConfig, CredentialKind, FailureCount, FailureEvent, OrderRequest, PinDecision,
    PinRequest, PinSource, RankedProfile, RecordedReason, StoredProfile, Usage,
};
use super::{exports, DefaultPolicy};
use crate::profiles as core;

impl exports::failover::policy::profiles::Guest for DefaultPolicy {
    fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
        let request = core::OrderRequest {
            provider: request.provider,
            explicit_order: request.explicit_order,
            configured: request
                .configured
                .into_iter()
                .map(|c| core::ConfiguredProfile {
                    id: c.id,
                    provider: c.provider,
                    mode: c.mode.map(kind_from_wit),
                })
                .collect(),
            stored: request.stored.into_iter().map(stored_from_wit).collect(),
            model: request.model,
            now_ms: request.now_ms,
        };
        core::order_profiles(&request)
            .into_iter()
            .map(ranked_to_wit)
            .collect()
    }

    fn pin_profile(request: PinRequest) -> PinDecision {
        let request = core::PinRequest {
            ranked: request.ranked.into_iter().map(ranked_from_wit).collect(),
            current: request.current,
            source: request.source.map(source_from_wit),
            pinned_at_compaction: request.pinned_at_compaction,
            compaction_count: request.compaction_count,
            session_reset: request.session_reset,
        };
        let decision = core::pin_profile(&request);
        PinDecision {
            profile: decision.profile,
            source: source_to_wit(decision.source),
            compaction_count: decision.compaction_count,
        }
    }

    fn record_failure(usage: Usage, event: FailureEvent, config: CooldownConfig) -> Usage {
        let event = core::FailureEvent {
            provider: event.provider,
            reason: recorded_from_wit(event.reason),
            model: event.model,
            retry_after_ms: event.retry_after_ms,
            reset_at_ms: event.reset_at_ms,
            now_ms: event.now_ms,
        };
        let config = core::CooldownConfig {
            billing_backoff_ms: config.billing_backoff_ms,
            billing_backoff_ms_by_provider: config.billing_backoff_ms_by_provider,
            billing_max_ms: config.billing_max_ms,
            failure_window_ms: config.failure_window_ms,
        };
        usage_to_wit(core::record_failure(
            &usage_from_wit(usage),
            &event,
            &config,
        ))
    }

    fn record_success(usage: Usage, model: Option<String>, now_ms: u64) -> Usage {
        usage_to_wit(core::record_success(
            &usage_from_wit(usage),
            model.as_deref(),
            now_ms,
        ))
    }
}

pub(super) fn kind_from_wit(kind: CredentialKind) -> core::CredentialKind {
    match kind {
        CredentialKind::Oauth => core::CredentialKind::OAuth,
        CredentialKind::Token => core::CredentialKind::Token,
        CredentialKind::ApiKey => core::CredentialKind::ApiKey,
    }
}

fn source_from_wit(source: PinSource) -> core::PinSource {
    match source {
        PinSource::Auto => core::PinSource::Auto,
        PinSource::User => core::PinSource::User,
    }
}

fn source_to_wit(source: core::PinSource) -> PinSource {
    match source {
        core::PinSource::Auto => PinSource::Auto,
        core::PinSource::User => PinSource::User,
    }
}

pub(super) fn ranked_from_wit(r: RankedProfile) -> core::RankedProfile {
    core::RankedProfile {
        id: r.id,
        available: r.available,
        blocked_until: r.blocked_until,
    }
}

fn ranked_to_wit(r: core::RankedProfile) -> RankedProfile {
    RankedProfile {
        id: r.id,
        available: r.available,
        blocked_until: r.blocked_until,
    }
}

/// The recorded reasons in the contract's order; both sides index this.
const RECORDED: [(RecordedReason, core::RecordedReason); 11] = [
    (RecordedReason::RateLimit, core::RecordedReason::RateLimit),
    (RecordedReason::Overloaded, core::RecordedReason::Overloaded),
    (RecordedReason::Billing, core::RecordedReason::Billing),
    (RecordedReason::Auth, core::RecordedReason::Auth),
    (
        RecordedReason::AuthPermanent,
        core::RecordedReason::AuthPermanent,
    ),
    (RecordedReason::Timeout, core::RecordedReason::Timeout),
    (RecordedReason::Format, core::RecordedReason::Format),
    (
        RecordedReason::ModelNotFound,
        core::RecordedReason::ModelNotFound,
    ),
    (
        RecordedReason::SessionExpired,
        core::RecordedReason::SessionExpired,
    ),
    (
        RecordedReason::ContextOverflow,
        core::RecordedReason::ContextOverflow,
    ),
    (RecordedReason::Unknown, core::RecordedReason::Unknown),
];

pub(super) fn recorded_from_wit(reason: RecordedReason) -> core::RecordedReason {
    RECORDED[reason as usize].1
}

pub(super) fn recorded_to_wit(reason: core::RecordedReason) -> RecordedReason {
    RECORDED
        .iter()
        .find(|(_, r)| *r == reason)
        .map_or(RecordedReason::Unknown, |(w, _)| *w)
}

pub(super) fn usage_from_wit(u: Usage) -> core::Usage {
    core::Usage {
        last_used: u.last_used,
        cooldown_until: u.cooldown_until,
        cooldown_reason: u.cooldown_reason.map(recorded_from_wit),
        cooldown_model: u.cooldown_model,
        disabled_until: u.disabled_until,
        disabled_reason: u.disabled_reason.map(recorded_from_wit),
        error_count: u.error_count,
        failure_counts: u
            .failure_counts
            .into_iter()
            .map(|c| (recorded_from_wit(c.reason), c.count))
            .collect(),
        last_failure_at: u.last_failure_at,
    }
}

fn usage_to_wit(u: core::Usage) -> Usage {
    Usage {
        last_used: u.last_used,
        cooldown_until: u.cooldown_until,
        cooldown_reason: u.cooldown_reason.map(recorded_to_wit),
        cooldown_model: u.cooldown_model,
        disabled_until: u.disabled_until,
        disabled_reason: u.disabled_reason.map(recorded_to_wit),
        error_count: u.error_count,
        failure_counts: u
            .failure_counts
            .into_iter()
            .map(|(reason, count)| FailureCount {
                reason: recorded_to_wit(reason),
                count,
            })
            .collect(),
        last_failure_at: u.last_failure_at,
    }
}

pub(super) fn stored_from_wit(p: StoredProfile) -> core::StoredProfile {
    core::StoredProfile {
        id: p.id,
        provider: p.provider,
        kind: kind_from_wit(p.kind),
        expires: p.expires,
        refreshable: p.refreshable,
        usage: usage_from_wit(p.usage),
    }
}
