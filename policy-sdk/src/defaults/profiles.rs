//! The default profile decisions on the contract's types: order (spec
//! §4), session pins (F-4.4 to F-4.6) and cooldown bookkeeping (§6).

use policy_types as core;

use super::convert::{
    configured_to_core, pin_source_from_core, pin_source_to_core, ranked_from_core, ranked_to_core,
    reason_to_core, stored_to_core, usage_from_core, usage_to_core,
};
use crate::types::{
    AttemptEvent, CooldownConfig, OrderRequest, Outcome, PinDecision, PinRequest, RankedProfile,
    Usage,
};

/// The default order of a provider's profiles.
pub fn order_profiles(request: OrderRequest) -> Vec<RankedProfile> {
    let order = core::OrderRequest {
        provider: request.provider.clone(),
        explicit_order: request.explicit_order.clone(),
        configured: request.configured.iter().map(configured_to_core).collect(),
        stored: request.stored.iter().map(stored_to_core).collect(),
        model: request.model.clone(),
        now_ms: request.now_ms,
    };
    let ranked = policy_guest::profiles::order_profiles(&order);
    let blocks = core::profile_blocks(&order.stored, &ranked);
    ranked_from_core(ranked, &blocks, request.now_ms)
}

/// The default pin for a session's next run.
pub fn pin_profile(request: PinRequest) -> PinDecision {
    let decision = policy_guest::profiles::pin_profile(&core::PinRequest {
        ranked: request.ranked.iter().map(ranked_to_core).collect(),
        current: request.current,
        source: request.source.map(pin_source_to_core),
        pinned_at_compaction: request.pinned_at_compaction,
        compaction_count: request.compaction_count,
        session_reset: request.session_reset,
    });
    PinDecision {
        profile: decision.profile,
        source: pin_source_from_core(decision.source),
        compaction_count: decision.compaction_count,
    }
}

/// The default bookkeeping after an attempt: a success clears what the
/// default policy clears; a failure cools down or disables as §6 says; a
/// `server-error` or `tls-certificate` failure concerns the endpoint, not
/// the credential, and leaves the usage as it was (F-12.7).
pub fn record_attempt(usage: Usage, event: AttemptEvent, config: CooldownConfig) -> Usage {
    let model = event.model.as_deref();
    let core_usage = usage_to_core(&usage);
    let answered = match event.outcome {
        Outcome::Success => {
            policy_guest::profiles::record_success(&core_usage, model, event.now_ms)
        }
        Outcome::Failure(verdict) => {
            let failure = core::FailureEvent {
                provider: event.provider.clone(),
                reason: reason_to_core(verdict.reason),
                model: event.model.clone(),
                retry_after_ms: verdict.retry_after_ms,
                reset_at_ms: verdict.reset_at_ms,
                now_ms: event.now_ms,
            };
            let config = core::CooldownConfig {
                billing_backoff_ms: config.billing_backoff_ms,
                billing_backoff_ms_by_provider: config.billing_backoff_ms_by_provider,
                billing_max_ms: config.billing_max_ms,
                failure_window_ms: config.failure_window_ms,
            };
            policy_guest::profiles::record_failure(&core_usage, &failure, &config)
        }
    };
    usage_from_core(answered)
}
