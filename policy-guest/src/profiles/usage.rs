//! How failures and successes change a profile's routing state (spec §6).

use super::{
    CooldownConfig, FailureEvent, ModelCooldown, ModelFailureCount, RecordedReason, Usage,
};
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
/// of `1 min · 5^(n−1)`, capped at 1 h (F-6.2), scoped to the model for
/// rate limits (F-6.4): `n` counts that model's own failures for a model's
/// window, the profile's other failures for the profile's, so that one
/// model's rate limits never lengthen another's backoff; a billing failure disables the profile for the
/// provider's base doubled per billing failure, capped at
/// `billing_max_ms` (F-6.5); `auth_permanent` likewise from 10 min to 1 h.
/// The provider's `retry-after` and exact reset time are floors for the new
/// window (F-6.8a, F-4.7), at most [`MAX_RETRY_AFTER_MS`] away. Inside an
/// active window nothing is recomputed (F-6.9): the failure is only counted,
/// except that an explicit wait reaching past the window extends it to that
/// wait (F-12.6). A model's rate limit opens or extends that model's own
/// window only: it never widens to the whole profile (F-12.11).
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
        next.model_failure_counts.clear();
    }
    next.error_count = next.error_count.saturating_add(1);
    let count = next.failure_counts.entry(event.reason).or_default();
    *count = count.saturating_add(1);
    next.last_failure_at = Some(now);
    let of_model = event
        .model
        .as_deref()
        .filter(|_| lane == Lane::Cooldown && event.reason == RecordedReason::RateLimit);
    if let Some(model) = of_model {
        count_model_failure(&mut next, model, event.reason);
    }

    // An absurd wait (a year, `u64::MAX`) is a provider's bug: the floor
    // stops at the longest wait a provider is believed.
    let latest = now.saturating_add(MAX_RETRY_AFTER_MS);
    let floor = event
        .retry_after_ms
        .map(|ms| now.saturating_add(ms))
        .max(event.reset_at_ms)
        .map_or(0, |at| at.min(latest));
    match lane {
        Lane::Cooldown => match of_model {
            Some(model) => cool_model(&mut next, model, now, floor),
            None => cool_profile(&mut next, event.reason, now, floor),
        },
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

/// The whole profile's cooldown after a failure of `reason`: a new window
/// on the ladder when none is open, else the open one, and either reaching
/// at least to `floor`.
fn cool_profile(usage: &mut Usage, reason: RecordedReason, now: u64, floor: u64) {
    let open = usage.cooldown_until.filter(|until| *until > now);
    if open.is_none() {
        usage.cooldown_reason = Some(reason);
    }
    let step = cooldown_step(usage.profile_failures());
    let until = open.unwrap_or_else(|| now.saturating_add(step));
    usage.cooldown_until = Some(until.max(floor));
}

/// Counts a failure that concerned `model` only.
fn count_model_failure(usage: &mut Usage, model: &str, reason: RecordedReason) {
    let counts = &mut usage.model_failure_counts;
    match counts
        .iter_mut()
        .find(|c| c.model == model && c.reason == reason)
    {
        Some(entry) => entry.count = entry.count.saturating_add(1),
        None => counts.push(ModelFailureCount {
            model: model.to_owned(),
            reason,
            count: 1,
        }),
    }
}

/// `model`'s own cooldown after its rate limit, as [`cool_profile`] does
/// for the whole profile; windows of models that have closed are dropped.
fn cool_model(usage: &mut Usage, model: &str, now: u64, floor: u64) {
    usage.model_cooldowns.retain(|c| c.until > now);
    let step = cooldown_step(usage.failures_of_model(model));
    match usage.model_cooldowns.iter_mut().find(|c| c.model == model) {
        Some(open) => open.until = open.until.max(floor),
        None => usage.model_cooldowns.push(ModelCooldown {
            model: model.to_owned(),
            until: now.saturating_add(step).max(floor),
            reason: RecordedReason::RateLimit,
        }),
    }
}

/// The cooldown ladder's step for the `error_count`-th failure (F-6.2).
fn cooldown_step(error_count: u32) -> u64 {
    ladder(
        COOLDOWN_BASE_MS,
        COOLDOWN_FACTOR,
        error_count,
        COOLDOWN_MAX_MS,
    )
}

/// The profile's state after a successful call on `model`: counters, the
/// disable and the whole profile's cooldown reset, `model`'s own cooldown
/// lifted, `lastUsed` set (F-6.9). Other models' cooldowns run on: this
/// success says nothing about them (F-12.11).
pub fn record_success(usage: &Usage, model: Option<&str>, now_ms: u64) -> Usage {
    let model_cooldowns = (usage.model_cooldowns.iter())
        .filter(|c| c.until > now_ms && Some(c.model.as_str()) != model)
        .cloned()
        .collect();
    Usage {
        last_used: Some(now_ms),
        cooldown_until: None,
        cooldown_reason: None,
        model_cooldowns,
        disabled_until: None,
        disabled_reason: None,
        error_count: 0,
        failure_counts: Default::default(),
        model_failure_counts: Vec::new(),
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

    /// A second model's rate limit opens that model's own window, never
    /// the whole profile's; a success clears only the succeeding model's
    /// window (F-12.11).
    #[test]
    fn model_cooldowns_stay_per_model() {
        let config = CooldownConfig {
            billing_backoff_ms: 5 * 3_600_000,
            billing_backoff_ms_by_provider: Vec::new(),
            billing_max_ms: 24 * 3_600_000,
            failure_window_ms: 24 * 3_600_000,
        };
        let limited = |model: &str, now_ms: u64| FailureEvent {
            provider: "openai".into(),
            reason: RecordedReason::RateLimit,
            model: Some(model.into()),
            retry_after_ms: None,
            reset_at_ms: None,
            now_ms,
        };
        let first = record_failure(&Usage::default(), &limited("gpt-a", 1_000), &config);
        let both = record_failure(&first, &limited("gpt-b", 2_000), &config);
        assert_eq!(both.cooldown_until, None, "{both:?}");
        assert_eq!(both.model_cooldown("gpt-a").unwrap().until, 61_000);
        // gpt-b's first failure: the ladder's first step, whatever gpt-a did.
        assert_eq!(both.model_cooldown("gpt-b").unwrap().until, 62_000);
        assert_eq!(both.blocked_until(Some("gpt-a"), 3_000), Some(61_000));
        assert_eq!(both.blocked_until(Some("gpt-c"), 3_000), None);

        // Inside gpt-a's window its next rate limit changes nothing but counts.
        let again = record_failure(&both, &limited("gpt-a", 3_000), &config);
        assert_eq!(again.model_cooldown("gpt-a").unwrap().until, 61_000);
        assert_eq!(again.error_count, 3);

        let served = record_success(&again, Some("gpt-b"), 4_000);
        assert!(served.model_cooldown("gpt-b").is_none(), "{served:?}");
        assert_eq!(served.model_cooldown("gpt-a").unwrap().until, 61_000);
        assert_eq!(served.error_count, 0);

        // A failure of no model cools the whole profile beside them, on
        // the profile's own count: after two models' rate limits an
        // overload is still the first step.
        let overloaded = FailureEvent {
            reason: RecordedReason::Overloaded,
            model: None,
            ..limited("gpt-a", 5_000)
        };
        let after_limits = record_failure(&again, &overloaded, &config);
        assert_eq!(
            after_limits.cooldown_until,
            Some(65_000),
            "{after_limits:?}"
        );
        assert_eq!(after_limits.error_count, 4);
        let whole = record_failure(&served, &overloaded, &config);
        assert_eq!(whole.cooldown_until, Some(65_000));
        assert_eq!(whole.model_cooldowns.len(), 1);
        assert_eq!(whole.blocked_until(Some("gpt-c"), 6_000), Some(65_000));
        // Closed windows are gone after the next success.
        assert!(record_success(&whole, None, 70_000)
            .model_cooldowns
            .is_empty());
    }
}
