//! Reconciling this replica's local changes, made while Redis was
//! unreachable, with what Redis holds when it returns.
//!
//! Routing state merges field by field: the later window wins (a cooldown
//! or disable that ends later, with its reason; each model's cooldown on
//! its own), counts take the larger value, times the later one. The rule is idempotent: a write that
//! reached Redis just before the connection failed, merged again, counts
//! nothing twice. Sessions are whole values: the later write wins, but a
//! person's choice made elsewhere is kept ([`merge_session`]).

use crate::auth::{PinSource, Usage};
use crate::state::SessionEntry;
use policy_types::OverrideSource;

/// A session's local entry merged with Redis's when both changed since the
/// local one was read: the local write wins, except a person's choices
/// made elsewhere meanwhile (a user's pin, a user's model), which a
/// replica's automatic change must never undo (F-4.5, F-9.2).
pub(super) fn merge_session(remote: &SessionEntry, local: &SessionEntry) -> SessionEntry {
    let mut merged = local.clone();
    if remote.profile_pin.source == Some(PinSource::User)
        && local.profile_pin.source != Some(PinSource::User)
    {
        merged.profile_pin = remote.profile_pin.clone();
    }
    if remote.model_override.source == Some(OverrideSource::User)
        && local.model_override.source != Some(OverrideSource::User)
    {
        merged.model_override = remote.model_override.clone();
        merged.live_switch_pending |= remote.live_switch_pending;
    }
    merged
}

/// `remote` and `local` merged (see the module docs).
pub(super) fn merge_usage(remote: &Usage, local: &Usage) -> Usage {
    let mut merged = remote.clone();
    if later(local.cooldown_until, remote.cooldown_until) {
        merged.cooldown_until = local.cooldown_until;
        merged.cooldown_reason = local.cooldown_reason;
    }
    for cooldown in &local.model_cooldowns {
        match merged
            .model_cooldowns
            .iter_mut()
            .find(|c| c.model == cooldown.model)
        {
            Some(theirs) if theirs.until >= cooldown.until => {}
            Some(theirs) => *theirs = cooldown.clone(),
            None => merged.model_cooldowns.push(cooldown.clone()),
        }
    }
    if later(local.disabled_until, remote.disabled_until) {
        merged.disabled_until = local.disabled_until;
        merged.disabled_reason = local.disabled_reason;
    }
    merged.error_count = remote.error_count.max(local.error_count);
    for (reason, count) in &local.failure_counts {
        let entry = merged.failure_counts.entry(*reason).or_default();
        *entry = (*entry).max(*count);
    }
    for count in &local.model_failure_counts {
        let theirs = (merged.model_failure_counts.iter_mut())
            .find(|c| c.model == count.model && c.reason == count.reason);
        match theirs {
            Some(theirs) => theirs.count = theirs.count.max(count.count),
            None => merged.model_failure_counts.push(count.clone()),
        }
    }
    // Counts merged one by one by their maximum may disagree: a reason
    // counts at least its models', the whole at least its reasons.
    for count in &merged.model_failure_counts.clone() {
        let of_reason: u32 = (merged.model_failure_counts.iter())
            .filter(|c| c.reason == count.reason)
            .fold(0, |sum, c| sum.saturating_add(c.count));
        let entry = merged.failure_counts.entry(count.reason).or_default();
        *entry = (*entry).max(of_reason);
    }
    let of_reasons = (merged.failure_counts.values()).fold(0u32, |sum, n| sum.saturating_add(*n));
    merged.error_count = merged.error_count.max(of_reasons);
    merged.last_used = remote.last_used.max(local.last_used);
    merged.last_failure_at = remote.last_failure_at.max(local.last_failure_at);
    merged
}

/// Whether window end `a` is later than `b` (no window is earliest).
fn later(a: Option<u64>, b: Option<u64>) -> bool {
    a.unwrap_or(0) > b.unwrap_or(0)
}

/// The longest expiry given: a year. A window further away is a policy's
/// or a hand-edited file's mistake, and Redis refuses an expiry past its
/// range.
const MAX_TTL_MS: u64 = 366 * 24 * 3_600_000;

/// How long a profile's state is kept in Redis, in ms from `now_ms`: until
/// its windows close and a quiet failure window has passed since it last
/// failed or served — by then the policy would have reset its counts
/// (F-6.6), so the entry is stale and expires on its own. Never less than
/// `floor_ms`, so that a clock behind the writer's cannot drop a fresh
/// entry at once.
pub(super) fn usage_ttl_ms(
    usage: &Usage,
    failure_window_ms: u64,
    now_ms: u64,
    floor_ms: u64,
) -> u64 {
    let windows = usage.last_window_end().unwrap_or(0);
    let activity = usage
        .last_failure_at
        .max(usage.last_used)
        .unwrap_or(0)
        .saturating_add(failure_window_ms);
    windows
        .max(activity)
        .saturating_sub(now_ms)
        .clamp(floor_ms, MAX_TTL_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::RecordedReason;

    fn usage(cooldown: Option<u64>, errors: u32, last_used: Option<u64>) -> Usage {
        Usage {
            cooldown_until: cooldown,
            cooldown_reason: cooldown.map(|_| RecordedReason::RateLimit),
            error_count: errors,
            failure_counts: [(RecordedReason::RateLimit, errors)].into_iter().collect(),
            last_used,
            ..Usage::default()
        }
    }

    #[test]
    fn a_users_choice_made_elsewhere_survives_an_automatic_local_change() {
        let mut remote = SessionEntry::default();
        remote.profile_pin.profile = Some("openai:b".into());
        remote.profile_pin.source = Some(PinSource::User);
        let mut local = SessionEntry::default();
        local.profile_pin.profile = Some("openai:a".into());
        local.profile_pin.source = Some(PinSource::Auto);
        local.model_override.model = Some("gpt-x".into());
        local.model_override.source = Some(OverrideSource::Auto);
        let merged = merge_session(&remote, &local);
        assert_eq!(merged.profile_pin, remote.profile_pin);
        assert_eq!(merged.model_override, local.model_override);
        // Two automatic changes: the local (later) one.
        remote.profile_pin.source = Some(PinSource::Auto);
        assert_eq!(merge_session(&remote, &local), local);
    }

    #[test]
    fn the_later_window_wins_and_counts_take_the_max() {
        let remote = usage(Some(1_000), 5, Some(10));
        let local = Usage {
            disabled_until: Some(9_000),
            disabled_reason: Some(RecordedReason::Billing),
            failure_counts: [(RecordedReason::Billing, 1)].into_iter().collect(),
            ..usage(Some(2_000), 3, Some(20))
        };
        let merged = merge_usage(&remote, &local);
        assert_eq!(merged.cooldown_until, Some(2_000));
        assert_eq!(merged.disabled_until, Some(9_000));
        assert_eq!(merged.disabled_reason, Some(RecordedReason::Billing));
        // The whole counts at least its reasons: 5 rate limits and a billing.
        assert_eq!(merged.error_count, 6);
        assert_eq!(merged.failure_counts[&RecordedReason::RateLimit], 5);
        assert_eq!(merged.failure_counts[&RecordedReason::Billing], 1);
        assert_eq!(merged.last_used, Some(20));
        // Idempotent, and the same whichever side is which for the maxima.
        assert_eq!(merge_usage(&merged, &local), merged);
        assert_eq!(merge_usage(&remote, &remote), remote);
    }

    #[test]
    fn entries_live_until_their_windows_close_and_a_quiet_window_passes() {
        let hour = 3_600_000;
        let entry = usage(Some(10 * hour), 1, Some(hour));
        assert_eq!(usage_ttl_ms(&entry, 24 * hour, hour, 1_000), 24 * hour);
        let disabled = Usage {
            disabled_until: Some(100 * hour),
            ..entry.clone()
        };
        assert_eq!(usage_ttl_ms(&disabled, 24 * hour, hour, 1_000), 99 * hour);
        assert_eq!(
            usage_ttl_ms(&Usage::default(), 24 * hour, 100 * hour, 1_000),
            1_000
        );
        let absurd = Usage {
            disabled_until: Some(u64::MAX),
            ..Usage::default()
        };
        assert_eq!(usage_ttl_ms(&absurd, 24 * hour, hour, 1_000), MAX_TTL_MS);
    }

    #[test]
    fn counts_of_models_merged_apart_stay_within_their_reason() {
        use crate::auth::ModelFailureCount;
        let of = |model: &str| Usage {
            error_count: 2,
            failure_counts: [(RecordedReason::RateLimit, 2)].into_iter().collect(),
            model_failure_counts: vec![ModelFailureCount {
                model: model.into(),
                reason: RecordedReason::RateLimit,
                count: 2,
            }],
            ..Usage::default()
        };
        let merged = merge_usage(&of("a"), &of("b"));
        assert_eq!(merged.model_failure_counts.len(), 2);
        assert_eq!(merged.failure_counts[&RecordedReason::RateLimit], 4);
        assert_eq!(merged.error_count, 4);
        assert_eq!(merged.profile_failures(), 0);
        assert_eq!(merge_usage(&merged, &of("b")), merged);
    }
}
