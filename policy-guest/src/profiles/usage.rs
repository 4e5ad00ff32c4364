//! How failures and successes change a profile's routing state (spec §6).

use super::{CooldownConfig, FailureEvent, RecordedReason, Usage};
use crate::retry_after::MAX_RETRY_AFTER_MS;

/// First cooldown step (F-6.2): one minute.
pub const COOLDOWN_BASE_MS: u64 = 60_000;
/// Each further failure multiplies the step by five: 1, 5, 25 minutes …
pub const COOLDOWN_FACTOR: u64 = 5;
/// … capped at one hour.
pub const COOLDOWN_MAX_MS: u64 = 60 * 60_000;
/// `auth_permanent` disables start at ten minutes (F-6.9) …
pub const AUTH_PERMANENT_BASE_MS: u64 = 10 * 60_000;
/// … and double up to an hour: long enough to stop hammering a revoked key,
/// short enough that a key an operator fixes comes back on its own.
pub const AUTH_PERMANENT_MAX_MS: u64 = 60 * 60_000;

/// Where a failure reason lands (F-6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// A short, growing cooldown.
    Cooldown,
    /// A long, doubling disable.
    Disable,
    /// The failure concerns the request or the model, not the credential.
    Untouched,
}

fn lane(reason: RecordedReason) -> Lane {
    use RecordedReason::*;
    match reason {
        RateLimit | Auth | Overloaded | Unknown => Lane::Cooldown,
        Billing | AuthPermanent => Lane::Disable,
        // The endpoint failed, not the credential (F-12.7, F-12.1).
        Timeout | ServerError | TlsCertificate => Lane::Untouched,
        Format | ContextOverflow | SessionExpired | ModelNotFound => Lane::Untouched,
    }
}

/// The profile's state after a failed call.
///
/// Failures are counted (after a quiet `failure_window_ms` the counts start
/// over, F-6.6). Outside an active window, a cooldown-lane failure opens one
/// of `1 min · 5^(errorCount−1)`, capped at 1 h (F-6.2), scoped to the model
/// for rate limits (F-6.4); a billing failure disables the profile for the
/// provider's base doubled per billing failure, capped at
/// `billing_max_ms` (F-6.5); `auth_permanent` likewise from 10 min to 1 h.
/// The provider's `retry-after` and exact reset time are floors for the new
/// window (F-6.8a, F-4.7), at most [`MAX_RETRY_AFTER_MS`] away. Inside an
/// active window nothing is recomputed (F-6.9): the failure is only counted
/// — a cooldown scoped to one model that now fails for another widens to
/// the whole profile — except that an explicit wait reaching past the
/// window extends it to that wait (F-12.6).
pub fn record_failure(usage: &Usage, event: &FailureEvent, config: &CooldownConfig) -> Usage {
    let lane = lane(event.reason);
    if lane == Lane::Untouched {
        return usage.clone();
    }
    let now = event.now_ms;
    let mut next = usage.clone();
    let quiet = next
        .last_failure_at
        .is_some_and(|at| now.saturating_sub(at) >= config.failure_window_ms);
    if quiet {
        next.error_count = 0;
        next.failure_counts.clear();
    }
    next.error_count = next.error_count.saturating_add(1);
    let count = next.failure_counts.entry(event.reason).or_default();
    *count = count.saturating_add(1);
    next.last_failure_at = Some(now);

    // An absurd wait (a year, `u64::MAX`) is a provider's bug: the floor
    // stops at the longest wait a provider is believed.
    let latest = now.saturating_add(MAX_RETRY_AFTER_MS);
    let floor = event
        .retry_after_ms
        .map(|ms| now.saturating_add(ms))
        .max(event.reset_at_ms)
        .map_or(0, |at| at.min(latest));
    match lane {
        Lane::Cooldown => {
            let scope = if event.reason == RecordedReason::RateLimit {
                event.model.clone()
            } else {
                None
            };
            if let Some(until) = next.cooldown_until.filter(|until| *until > now) {
                if next.cooldown_model != scope {
                    next.cooldown_model = None;
                }
                next.cooldown_until = Some(until.max(floor));
            } else {
                let step = ladder(
                    COOLDOWN_BASE_MS,
                    COOLDOWN_FACTOR,
                    next.error_count,
                    COOLDOWN_MAX_MS,
                );
                next.cooldown_until = Some(now.saturating_add(step).max(floor));
                next.cooldown_reason = Some(event.reason);
                next.cooldown_model = scope;
            }
        }
        Lane::Disable => {
            if let Some(until) = next.disabled_until.filter(|until| *until > now) {
                next.disabled_until = Some(until.max(floor));
            } else {
                let (base, cap) = if event.reason == RecordedReason::Billing {
                    let base = config
                        .billing_backoff_ms_by_provider
                        .iter()
                        .find(|(provider, _)| *provider == event.provider)
                        .map_or(config.billing_backoff_ms, |(_, ms)| *ms);
                    (base, config.billing_max_ms)
                } else {
                    (AUTH_PERMANENT_BASE_MS, AUTH_PERMANENT_MAX_MS)
                };
                let window = ladder(base, 2, next.failures_of(event.reason), cap);
                next.disabled_until = Some(now.saturating_add(window).max(floor));
                next.disabled_reason = Some(event.reason);
            }
        }
        Lane::Untouched => {}
    }
    next
}

/// The profile's state after a successful call on `model`: counters and
/// windows reset, `lastUsed` set (F-6.9). A cooldown scoped to another model
/// stays: this success says nothing about that model.
pub fn record_success(usage: &Usage, model: Option<&str>, now_ms: u64) -> Usage {
    let keep_cooldown = match (usage.cooldown_model.as_deref(), model) {
        (Some(scope), Some(model)) => {
            scope != model && usage.cooldown_until.is_some_and(|u| u > now_ms)
        }
        _ => false,
    };
    Usage {
        last_used: Some(now_ms),
        cooldown_until: usage.cooldown_until.filter(|_| keep_cooldown),
        cooldown_reason: usage.cooldown_reason.filter(|_| keep_cooldown),
        cooldown_model: usage.cooldown_model.clone().filter(|_| keep_cooldown),
        disabled_until: None,
        disabled_reason: None,
        error_count: 0,
        failure_counts: Default::default(),
        last_failure_at: usage.last_failure_at,
    }
}

/// `base · factor^(n−1)`, capped; `n` counts from 1.
fn ladder(base: u64, factor: u64, n: u32, cap: u64) -> u64 {
    let mut step = base;
    for _ in 1..n.max(1) {
        step = step.saturating_mul(factor);
        if step >= cap {
            break;
        }
    }
    step.min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ladder_steps_and_caps() {
        let steps: Vec<u64> = (1..=6)
            .map(|n| ladder(COOLDOWN_BASE_MS, COOLDOWN_FACTOR, n, COOLDOWN_MAX_MS) / 60_000)
            .collect();
        assert_eq!(steps, [1, 5, 25, 60, 60, 60]);
        assert_eq!(ladder(5, 2, u32::MAX, u64::MAX), u64::MAX);
    }

    /// An endpoint's failure leaves the credential as it was (F-12.7):
    /// no cooldown, no disable, not even a count.
    #[test]
    fn server_and_certificate_failures_leave_the_credential_alone() {
        let config = CooldownConfig {
            billing_backoff_ms: 5 * 3_600_000,
            billing_backoff_ms_by_provider: Vec::new(),
            billing_max_ms: 24 * 3_600_000,
            failure_window_ms: 24 * 3_600_000,
        };
        let usage = Usage::default();
        for reason in [RecordedReason::ServerError, RecordedReason::TlsCertificate] {
            let event = FailureEvent {
                provider: "openai".into(),
                reason,
                model: Some("gpt-x".into()),
                retry_after_ms: Some(30_000),
                reset_at_ms: None,
                now_ms: 1_000,
            };
            assert_eq!(record_failure(&usage, &event, &config), usage, "{reason:?}");
        }
        let rate_limited = FailureEvent {
            provider: "openai".into(),
            reason: RecordedReason::RateLimit,
            model: None,
            retry_after_ms: None,
            reset_at_ms: None,
            now_ms: 1_000,
        };
        assert!(record_failure(&usage, &rate_limited, &config)
            .cooldown_until
            .is_some());
    }
}
