//! What a run does after a failed attempt (spec F-7.4, F-7.5, F-7.5a, F-6.7,
//! F-4.5, F-9.6).

use policy_types::{FailedAttempt, RecordedReason, RotationConfig, RunStep, StopReason};

/// Same-provider profile rotations after a transient timeout before the
/// next model (F-12.1): one tells a stuck connection of one credential from
/// a provider that is down, and a second hang makes the model slow
/// (F-12.3) anyway.
pub const TIMEOUT_PROFILE_ROTATIONS: u32 = 1;

/// The step after a failed attempt.
///
/// Aborts that are not timeouts, format errors and expired sessions stop
/// the run; so does a context overflow, unless a larger model is configured
/// for it and later in the chain. A live-switch error pointing at a later candidate
/// jumps straight to it; otherwise it is treated as any failover error.
/// Credential failures (auth, revoked keys, billing) rotate through every
/// profile of the provider; rate limits and overloads rotate at most the
/// configured number of times (overloads after the configured wait);
/// transient timeouts rotate [`TIMEOUT_PROFILE_ROTATIONS`] times (F-12.1),
/// but an attempt that ran to its deadline with nothing received moves to
/// the next model: the provider is silent, not the key;
/// other failures — missing models, unrecognised errors — move to the next
/// model. A profile the user pinned is never rotated away from: the
/// run moves to the next model instead. With no candidate left, the run
/// stops. A rate limit or overload that would leave the candidate and
/// names a wait within `wait_cap_ms` waits it out on the same profile
/// first. No wait is longer than the config's `wait_cap_ms`.
pub fn next_step(attempt: &FailedAttempt, config: &RotationConfig) -> RunStep {
    use RecordedReason::*;
    if attempt.aborted && attempt.reason != Timeout {
        return RunStep::Stop(StopReason::Aborted);
    }
    match attempt.reason {
        ContextOverflow => return overflow_step(attempt),
        Format => return RunStep::Stop(StopReason::Format),
        SessionExpired => return RunStep::Stop(StopReason::SessionExpired),
        _ => {}
    }
    let next = attempt.position.saturating_add(1);
    if let Some(target) = &attempt.live_switch_to {
        let later = attempt
            .chain
            .iter()
            .enumerate()
            .skip(next as usize)
            .find(|(_, model)| *model == target);
        if let Some((index, _)) = later {
            return RunStep::Candidate(u32::try_from(index).unwrap_or(u32::MAX));
        }
    }
    let rotation = match attempt.reason {
        Auth | AuthPermanent | Billing => Some((u32::MAX, 0)),
        RateLimit => Some((config.rate_limited_profile_rotations, 0)),
        Overloaded => Some((
            config.overloaded_profile_rotations,
            config.overloaded_backoff_ms,
        )),
        // A silent provider, not a key: the attempt ran to its deadline
        // with nothing received, and another key would wait as long.
        Timeout if attempt.hung => None,
        Timeout => Some((TIMEOUT_PROFILE_ROTATIONS, 0)),
        _ => None,
    };
    if let Some((cap, wait_ms)) = rotation {
        if !attempt.user_pinned_profile && attempt.profiles_left > 0 && attempt.rotations < cap {
            return RunStep::RotateProfile(wait_ms.min(config.wait_cap_ms));
        }
    }
    if let Some(wait_ms) = short_wait(attempt, config) {
        return RunStep::WaitAndRetry(wait_ms);
    }
    if (next as usize) < attempt.chain.len() {
        RunStep::Candidate(next)
    } else {
        RunStep::Stop(StopReason::Exhausted)
    }
}

/// A context overflow: on to the larger model configured for it when the
/// chain holds it later; otherwise the run stops (F-5.9).
fn overflow_step(attempt: &FailedAttempt) -> RunStep {
    let after = attempt.position as usize + 1;
    let larger = attempt.overflow_to.as_ref().and_then(|model| {
        (attempt.chain.iter().enumerate().skip(after)).find(|(_, candidate)| *candidate == model)
    });
    match larger {
        Some((index, _)) => RunStep::Candidate(u32::try_from(index).unwrap_or(u32::MAX)),
        None => RunStep::Stop(StopReason::ContextOverflow),
    }
}

/// The provider's own wait, when the run would leave this candidate and
/// the wait is short enough to hold the request (F-12.10): a rate limit
/// or an overload that names a wait within `wait_cap_ms` is waited out on
/// the same profile (the host retries it once).
fn short_wait(attempt: &FailedAttempt, config: &RotationConfig) -> Option<u64> {
    use RecordedReason::*;
    let wait_ms = attempt.retry_after_ms?;
    let waitable = matches!(attempt.reason, RateLimit | Overloaded);
    (waitable && wait_ms <= config.wait_cap_ms).then_some(wait_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(reason: RecordedReason) -> FailedAttempt {
        FailedAttempt {
            reason,
            retry_after_ms: None,
            aborted: false,
            hung: false,
            live_switch_to: None,
            user_pinned_profile: false,
            rotations: 0,
            profiles_left: 2,
            chain: vec!["a/x".into(), "b/y".into()],
            position: 0,
            overflow_to: None,
        }
    }

    /// An endpoint's failure moves to the next model at once: another key
    /// of the same endpoint would fail alike (F-12.7). A fast timeout first
    /// tries the next key (F-12.1); a hung attempt does not.
    #[test]
    fn endpoint_failures_advance_the_chain_without_rotating() {
        let config = RotationConfig {
            rate_limited_profile_rotations: 1,
            overloaded_profile_rotations: 1,
            overloaded_backoff_ms: 0,
            wait_cap_ms: 60_000,
        };
        for reason in [RecordedReason::ServerError, RecordedReason::TlsCertificate] {
            assert_eq!(
                next_step(&failed(reason), &config),
                RunStep::Candidate(1),
                "{reason:?}"
            );
        }
        assert_eq!(
            next_step(&failed(RecordedReason::Timeout), &config),
            RunStep::RotateProfile(0)
        );
        // A silent provider: the next model, not the next key.
        let hung = FailedAttempt {
            hung: true,
            ..failed(RecordedReason::Timeout)
        };
        assert_eq!(next_step(&hung, &config), RunStep::Candidate(1));
    }

    /// A short `Retry-After` on a candidate the run would leave is waited
    /// out on the same profile; a longer one, or one while another key
    /// may be tried, is not (F-12.10).
    #[test]
    fn a_short_explicit_wait_is_waited_out_before_moving_on() {
        let config = RotationConfig {
            rate_limited_profile_rotations: 1,
            overloaded_profile_rotations: 1,
            overloaded_backoff_ms: 0,
            wait_cap_ms: 2_000,
        };
        let limited = |retry_after_ms, profiles_left| FailedAttempt {
            retry_after_ms,
            profiles_left,
            ..failed(RecordedReason::RateLimit)
        };
        assert_eq!(
            next_step(&limited(Some(1_500), 0), &config),
            RunStep::WaitAndRetry(1_500)
        );
        assert_eq!(
            next_step(&limited(Some(2_001), 0), &config),
            RunStep::Candidate(1)
        );
        assert_eq!(next_step(&limited(None, 0), &config), RunStep::Candidate(1));
        assert_eq!(
            next_step(&limited(Some(1_500), 1), &config),
            RunStep::RotateProfile(0)
        );
        let last = FailedAttempt {
            position: 1,
            ..limited(Some(2_000), 0)
        };
        assert_eq!(next_step(&last, &config), RunStep::WaitAndRetry(2_000));
        let billing = FailedAttempt {
            retry_after_ms: Some(1_000),
            profiles_left: 0,
            ..failed(RecordedReason::Billing)
        };
        assert_eq!(next_step(&billing, &config), RunStep::Candidate(1));
    }
}
