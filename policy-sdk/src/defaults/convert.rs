//! Between the contract's types and the default policy's core types. The
//! two sides name the same things; where the contract says more than the
//! core keeps (reasons the core lacks, cooldowns of several models, counts
//! per model), the conversion says what it keeps.

use policy_types as core;

use crate::types::{
    Block, ConfiguredProfile, CredentialKind, FailureCount, FailureDetail, FailureReason,
    ModelCooldown, PinSource, RankedProfile, SelectionSource, StoredProfile, Usage,
};

/// A contract reason as the core records it.
pub(super) fn reason_to_core(reason: FailureReason) -> core::RecordedReason {
    use core::RecordedReason as R;
    match reason {
        FailureReason::RateLimit => R::RateLimit,
        FailureReason::Overloaded => R::Overloaded,
        FailureReason::Billing => R::Billing,
        FailureReason::Auth => R::Auth,
        FailureReason::AuthPermanent => R::AuthPermanent,
        FailureReason::Timeout => R::Timeout,
        FailureReason::ServerError => R::ServerError,
        FailureReason::TlsCertificate => R::TlsCertificate,
        FailureReason::Format => R::Format,
        FailureReason::ModelNotFound => R::ModelNotFound,
        FailureReason::SessionExpired => R::SessionExpired,
        FailureReason::ContextOverflow => R::ContextOverflow,
        FailureReason::Unknown => R::Unknown,
    }
}

/// A core reason in the contract's terms.
pub(super) fn recorded_from_core(reason: core::RecordedReason) -> FailureReason {
    match reason {
        core::RecordedReason::Unknown => FailureReason::Unknown,
        core::RecordedReason::RateLimit => FailureReason::RateLimit,
        core::RecordedReason::Overloaded => FailureReason::Overloaded,
        core::RecordedReason::Billing => FailureReason::Billing,
        core::RecordedReason::Auth => FailureReason::Auth,
        core::RecordedReason::AuthPermanent => FailureReason::AuthPermanent,
        core::RecordedReason::Timeout => FailureReason::Timeout,
        core::RecordedReason::ServerError => FailureReason::ServerError,
        core::RecordedReason::TlsCertificate => FailureReason::TlsCertificate,
        core::RecordedReason::Format => FailureReason::Format,
        core::RecordedReason::ModelNotFound => FailureReason::ModelNotFound,
        core::RecordedReason::SessionExpired => FailureReason::SessionExpired,
        core::RecordedReason::ContextOverflow => FailureReason::ContextOverflow,
    }
}

/// A classifier's reason in the contract's terms.
pub(super) fn reason_from_core(reason: core::Reason) -> FailureReason {
    recorded_from_core(core::RecordedReason::from(Some(reason)))
}

pub(super) fn detail_from_core(detail: core::Detail) -> FailureDetail {
    match detail {
        core::Detail::EmptyResponse => FailureDetail::EmptyResponse,
        core::Detail::NoErrorDetails => FailureDetail::NoErrorDetails,
        core::Detail::Unclassified => FailureDetail::Unclassified,
    }
}

pub(super) fn kind_to_core(kind: CredentialKind) -> core::CredentialKind {
    match kind {
        CredentialKind::Oauth => core::CredentialKind::OAuth,
        CredentialKind::Token => core::CredentialKind::Token,
        CredentialKind::ApiKey => core::CredentialKind::ApiKey,
    }
}

pub(super) fn pin_source_to_core(source: PinSource) -> core::PinSource {
    match source {
        PinSource::Auto => core::PinSource::Auto,
        PinSource::User => core::PinSource::User,
    }
}

pub(super) fn pin_source_from_core(source: core::PinSource) -> PinSource {
    match source {
        core::PinSource::Auto => PinSource::Auto,
        core::PinSource::User => PinSource::User,
    }
}

pub(super) fn selection_source_from_core(source: core::SelectionSource) -> SelectionSource {
    use core::SelectionSource as S;
    match source {
        S::ConfiguredDefault => SelectionSource::ConfiguredDefault,
        S::AgentPrimary => SelectionSource::AgentPrimary,
        S::AutoOverride => SelectionSource::AutoOverride,
        S::UserOverride => SelectionSource::UserOverride,
        S::LegacyOverride => SelectionSource::LegacyOverride,
        S::CronJob => SelectionSource::CronJob,
        S::Heartbeat => SelectionSource::Heartbeat,
    }
}

/// A profile's usage in the core's terms: counts by reason of every model,
/// and apart the counts of failures that concerned one model.
pub(super) fn usage_to_core(usage: &Usage) -> core::Usage {
    let (failure_counts, model_failure_counts) =
        core::counts_from_listed((usage.failure_counts.iter()).map(|entry| {
            (
                reason_to_core(entry.reason),
                entry.model.clone(),
                entry.count,
            )
        }));
    core::Usage {
        last_used: usage.last_used,
        cooldown_until: usage.cooldown_until,
        cooldown_reason: usage.cooldown_reason.map(reason_to_core),
        model_cooldowns: (usage.model_cooldowns.iter())
            .map(|c| core::ModelCooldown {
                model: c.model.clone(),
                until: c.until,
                reason: reason_to_core(c.reason),
            })
            .collect(),
        disabled_until: usage.disabled_until,
        disabled_reason: usage.disabled_reason.map(reason_to_core),
        error_count: usage.error_count,
        failure_counts,
        model_failure_counts,
        last_failure_at: usage.last_failure_at,
    }
}

/// The core's usage in the contract's terms.
pub(super) fn usage_from_core(core: core::Usage) -> Usage {
    let failure_counts = (core.listed_counts())
        .map(|(reason, model, count)| FailureCount {
            reason: recorded_from_core(reason),
            model: model.map(str::to_owned),
            count,
        })
        .collect();
    Usage {
        last_used: core.last_used,
        cooldown_until: core.cooldown_until,
        cooldown_reason: core.cooldown_reason.map(recorded_from_core),
        model_cooldowns: (core.model_cooldowns.into_iter())
            .map(|c| ModelCooldown {
                model: c.model,
                until: c.until,
                reason: recorded_from_core(c.reason),
            })
            .collect(),
        disabled_until: core.disabled_until,
        disabled_reason: core.disabled_reason.map(recorded_from_core),
        error_count: core.error_count,
        failure_counts,
        last_failure_at: core.last_failure_at,
    }
}

pub(super) fn stored_to_core(profile: &StoredProfile) -> core::StoredProfile {
    core::StoredProfile {
        id: profile.id.clone(),
        provider: profile.provider.clone(),
        kind: kind_to_core(profile.kind),
        expires: profile.expires,
        refreshable: profile.refreshable,
        usage: usage_to_core(&profile.usage),
    }
}

pub(super) fn configured_to_core(profile: &ConfiguredProfile) -> core::ConfiguredProfile {
    core::ConfiguredProfile {
        id: profile.id.clone(),
        provider: profile.provider.clone(),
        mode: profile.mode.map(kind_to_core),
    }
}

/// A contract order's profile in the core's terms.
pub(super) fn ranked_to_core(profile: &RankedProfile) -> core::RankedProfile {
    core::RankedProfile {
        id: profile.id.clone(),
        available: profile.blocked.is_none(),
        blocked_until: profile.blocked.as_ref().map(|b| b.until),
    }
}

/// Why each blocked profile of a contract order is blocked, in the core's terms.
pub(super) fn blocks_to_core(ranked: &[RankedProfile]) -> Vec<core::ProfileBlock> {
    ranked
        .iter()
        .filter_map(|r| {
            let block = r.blocked.as_ref()?;
            Some(core::ProfileBlock {
                profile: r.id.clone(),
                reason: reason_to_core(block.reason),
                until: block.until,
            })
        })
        .collect()
}

/// The core's order in the contract's terms: each blocked profile carries
/// the reason `blocks` gives it (`unknown` without one) and the time it is
/// free (`now_ms` when the core gave none).
pub(super) fn ranked_from_core(
    ranked: Vec<core::RankedProfile>,
    blocks: &[core::ProfileBlock],
    now_ms: u64,
) -> Vec<RankedProfile> {
    let by_id: std::collections::BTreeMap<&str, &core::ProfileBlock> =
        blocks.iter().map(|b| (b.profile.as_str(), b)).collect();
    ranked
        .into_iter()
        .map(|r| {
            let blocked = (!r.available).then(|| {
                let found = by_id.get(r.id.as_str());
                Block {
                    reason: found.map_or(FailureReason::Unknown, |b| recorded_from_core(b.reason)),
                    until: r.blocked_until.unwrap_or(now_ms),
                }
            });
            RankedProfile { id: r.id, blocked }
        })
        .collect()
}
