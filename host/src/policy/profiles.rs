//! The policy's profile functions (spec §4, §6), called through the
//! component, with the host's own types on both sides and every answer
//! checked before the host acts on it.

use std::collections::{BTreeMap, HashSet};

use super::bindings::exports::failover::policy::types as wit;
use super::error::PolicyError;
use super::module::Policy;
use crate::auth::model::{
    CooldownConfig, CredentialKind, FailureEvent, OrderRequest, PinDecision, PinRequest, PinSource,
    RankedProfile, RecordedReason, Usage,
};

/// Longest window a policy may open: a week past the call, the longest
/// usage window providers announce. Anything later is an invalid decision.
pub const MAX_WINDOW_MS: u64 = 7 * 24 * 60 * 60 * 1000;

impl Policy {
    /// The profiles to try for a provider, best first.
    pub fn order_profiles(
        &self,
        request: &OrderRequest,
    ) -> Result<Vec<RankedProfile>, PolicyError> {
        let input = wit::OrderRequest {
            provider: request.provider.clone(),
            explicit_order: request.explicit_order.clone(),
            configured: request
                .configured
                .iter()
                .map(|c| wit::ConfiguredProfile {
                    id: c.id.clone(),
                    provider: c.provider.clone(),
                    mode: c.mode.map(kind_to_wit),
                })
                .collect(),
            stored: request.stored.iter().map(stored_to_wit).collect(),
            model: request.model.clone(),
            now_ms: request.now_ms,
        };
        let ranked = self.call("order-profiles", |store, guest| {
            guest
                .failover_policy_profiles()
                .call_order_profiles(store, &input)
        })?;
        let invalid = |problem: String| PolicyError::InvalidOutput {
            call: "order-profiles",
            problem,
        };
        let known: HashSet<&str> = request.stored.iter().map(|p| p.id.as_str()).collect();
        let mut seen = HashSet::new();
        for entry in &ranked {
            if !known.contains(entry.id.as_str()) {
                return Err(invalid(format!(
                    "it named profile {:?}, which is not stored",
                    entry.id
                )));
            }
            if !seen.insert(entry.id.as_str()) {
                return Err(invalid(format!("it named profile {:?} twice", entry.id)));
            }
            if entry.available == entry.blocked_until.is_some() {
                return Err(invalid(format!(
                    "profile {:?} must be either available or blocked until a time",
                    entry.id
                )));
            }
        }
        Ok(ranked
            .into_iter()
            .map(|r| RankedProfile {
                id: r.id,
                available: r.available,
                blocked_until: r.blocked_until,
            })
            .collect())
    }

    /// The profile a session should use next.
    pub fn pin_profile(&self, request: &PinRequest) -> Result<PinDecision, PolicyError> {
        let input = wit::PinRequest {
            ranked: request.ranked.iter().map(ranked_to_wit).collect(),
            current: request.current.clone(),
            source: request.source.map(source_to_wit),
            pinned_at_compaction: request.pinned_at_compaction,
            compaction_count: request.compaction_count,
            session_reset: request.session_reset,
        };
        let decision = self.call("pin-profile", |store, guest| {
            guest
                .failover_policy_profiles()
                .call_pin_profile(store, &input)
        })?;
        let listed = |id: &str| request.ranked.iter().any(|r| r.id == id);
        match decision.profile.as_deref() {
            Some(id) if !listed(id) => {
                return Err(PolicyError::InvalidOutput {
                    call: "pin-profile",
                    problem: format!("it pinned profile {id:?}, which was not offered"),
                })
            }
            None if !request.ranked.is_empty() => {
                return Err(PolicyError::InvalidOutput {
                    call: "pin-profile",
                    problem: "it pinned nothing although profiles were offered".into(),
                })
            }
            _ => {}
        }
        Ok(PinDecision {
            profile: decision.profile,
            source: match decision.source {
                wit::PinSource::Auto => PinSource::Auto,
                wit::PinSource::User => PinSource::User,
            },
            compaction_count: decision.compaction_count,
        })
    }

    /// A profile's state after a failed call.
    pub fn record_failure(
        &self,
        usage: &Usage,
        event: &FailureEvent,
        config: &CooldownConfig,
    ) -> Result<Usage, PolicyError> {
        let (input, wit_event, wit_config) = (
            usage_to_wit(usage),
            wit::FailureEvent {
                provider: event.provider.clone(),
                reason: recorded_to_wit(event.reason),
                model: event.model.clone(),
                retry_after_ms: event.retry_after_ms,
                reset_at_ms: event.reset_at_ms,
                now_ms: event.now_ms,
            },
            wit::CooldownConfig {
                billing_backoff_ms: config.billing_backoff_ms,
                billing_backoff_ms_by_provider: config.billing_backoff_ms_by_provider.clone(),
                billing_max_ms: config.billing_max_ms,
                failure_window_ms: config.failure_window_ms,
            },
        );
        let next = self.call("record-failure", |store, guest| {
            guest.failover_policy_profiles().call_record_failure(
                store,
                &input,
                &wit_event,
                &wit_config,
            )
        })?;
        checked_usage("record-failure", usage, usage_from_wit(next), event.now_ms)
    }

    /// A profile's state after a successful call on `model`.
    pub fn record_success(
        &self,
        usage: &Usage,
        model: Option<&str>,
        now_ms: u64,
    ) -> Result<Usage, PolicyError> {
        let input = usage_to_wit(usage);
        let model = model.map(str::to_owned);
        let next = self.call("record-success", |store, guest| {
            guest.failover_policy_profiles().call_record_success(
                store,
                &input,
                model.as_deref(),
                now_ms,
            )
        })?;
        checked_usage("record-success", usage, usage_from_wit(next), now_ms)
    }
}

/// A window the policy opened must end after `now` and within
/// [`MAX_WINDOW_MS`]; one it left alone may stay as it was.
fn checked_usage(
    call: &'static str,
    before: &Usage,
    after: Usage,
    now: u64,
) -> Result<Usage, PolicyError> {
    let windows = [
        ("cooldownUntil", before.cooldown_until, after.cooldown_until),
        ("disabledUntil", before.disabled_until, after.disabled_until),
    ];
    for (name, old, new) in windows {
        let Some(until) = new else { continue };
        if Some(until) == old {
            continue;
        }
        if until <= now || until > now.saturating_add(MAX_WINDOW_MS) {
            return Err(PolicyError::InvalidOutput {
                call,
                problem: format!(
                    "it set {name} to {until}, outside ({now}, {now} + {MAX_WINDOW_MS} ms]"
                ),
            });
        }
    }
    if after.last_used.is_some_and(|at| at > now)
        || after.last_failure_at.is_some_and(|at| at > now)
    {
        return Err(PolicyError::InvalidOutput {
            call,
            problem: "it recorded a use or failure in the future".into(),
        });
    }
    Ok(after)
}

pub(super) fn kind_to_wit(kind: CredentialKind) -> wit::CredentialKind {
    match kind {
        CredentialKind::OAuth => wit::CredentialKind::Oauth,
        CredentialKind::Token => wit::CredentialKind::Token,
        CredentialKind::ApiKey => wit::CredentialKind::ApiKey,
    }
}

fn source_to_wit(source: PinSource) -> wit::PinSource {
    match source {
        PinSource::Auto => wit::PinSource::Auto,
        PinSource::User => wit::PinSource::User,
    }
}

/// Host and contract reasons, index for index (`RecordedReason::ALL` is in
/// the contract's order).
const RECORDED: [wit::RecordedReason; 11] = [
    wit::RecordedReason::RateLimit,
    wit::RecordedReason::Overloaded,
    wit::RecordedReason::Billing,
    wit::RecordedReason::Auth,
    wit::RecordedReason::AuthPermanent,
    wit::RecordedReason::Timeout,
    wit::RecordedReason::Format,
    wit::RecordedReason::ModelNotFound,
    wit::RecordedReason::SessionExpired,
    wit::RecordedReason::ContextOverflow,
    wit::RecordedReason::Unknown,
];

pub(super) fn recorded_to_wit(reason: RecordedReason) -> wit::RecordedReason {
    let index = RecordedReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("ALL lists every reason");
    RECORDED[index]
}

pub(super) fn recorded_from_wit(reason: wit::RecordedReason) -> RecordedReason {
    let index = RECORDED
        .iter()
        .position(|r| *r == reason)
        .expect("RECORDED lists every reason");
    RecordedReason::ALL[index]
}

pub(super) fn usage_to_wit(u: &Usage) -> wit::Usage {
    wit::Usage {
        last_used: u.last_used,
        cooldown_until: u.cooldown_until,
        cooldown_reason: u.cooldown_reason.map(recorded_to_wit),
        cooldown_model: u.cooldown_model.clone(),
        disabled_until: u.disabled_until,
        disabled_reason: u.disabled_reason.map(recorded_to_wit),
        error_count: u.error_count,
        failure_counts: u
            .failure_counts
            .iter()
            .map(|(reason, count)| wit::FailureCount {
                reason: recorded_to_wit(*reason),
                count: *count,
            })
            .collect(),
        last_failure_at: u.last_failure_at,
    }
}

fn usage_from_wit(u: wit::Usage) -> Usage {
    let mut failure_counts = BTreeMap::new();
    for count in u.failure_counts {
        *failure_counts
            .entry(recorded_from_wit(count.reason))
            .or_insert(0) += count.count;
    }
    Usage {
        last_used: u.last_used,
        cooldown_until: u.cooldown_until,
        cooldown_reason: u.cooldown_reason.map(recorded_from_wit),
        cooldown_model: u.cooldown_model,
        disabled_until: u.disabled_until,
        disabled_reason: u.disabled_reason.map(recorded_from_wit),
        error_count: u.error_count,
        failure_counts,
        last_failure_at: u.last_failure_at,
    }
}

pub(super) fn stored_to_wit(p: &crate::auth::StoredProfile) -> wit::StoredProfile {
    wit::StoredProfile {
        id: p.id.clone(),
        provider: p.provider.clone(),
        kind: kind_to_wit(p.kind),
        expires: p.expires,
        refreshable: p.refreshable,
        usage: usage_to_wit(&p.usage),
    }
}

pub(super) fn ranked_to_wit(r: &RankedProfile) -> wit::RankedProfile {
    wit::RankedProfile {
        id: r.id.clone(),
        available: r.available,
        blocked_until: r.blocked_until,
    }
}
