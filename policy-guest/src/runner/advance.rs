//! What a run does after a failed attempt (spec F-7.4, F-7.5, F-7.5a, F-6.7,
//! F-4.5, F-9.6).

use crate::profiles::RecordedReason;

/// Same-provider profile rotations after a transient timeout before the
/// next model (F-12.1): one tells a stuck connection of one credential from
/// a provider that is down, and a second hang makes the model slow
/// (F-12.3) anyway.
pub const TIMEOUT_PROFILE_ROTATIONS: u32 = 1;

/// The profile-rotation caps of `auth.cooldowns.*` (F-6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationConfig {
    /// Same-provider profile rotations on rate limits before model fallback.
    pub rate_limited_profile_rotations: u32,
    /// Same-provider profile rotations on overload before model fallback.
    pub overloaded_profile_rotations: u32,
    /// Wait before an overload rotation.
    pub overloaded_backoff_ms: u64,
}

/// A failed attempt and where the run stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAttempt {
    /// The classified reason (`Unknown` when the classifier named none).
    pub reason: RecordedReason,
    /// The caller aborted the call; a timeout-shaped abort is a timeout.
    pub aborted: bool,
    /// A live-switch error pointing at this model (F-9.6).
    pub live_switch_to: Option<String>,
    /// The profile was pinned by the user (`/model …@profile`, F-4.5).
    pub user_pinned_profile: bool,
    /// Profile rotations already made on this candidate.
    pub rotations: u32,
    /// Profiles of this provider still untried for this candidate.
    pub profiles_left: u32,
    /// The chain and the failed candidate's place in it.
    pub chain: Vec<String>,
    pub position: u32,
}

/// Why a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// An explicit abort that is not timeout-shaped (F-7.5).
    Aborted,
    /// Context overflow stays with compaction/retry, never fallback (F-5.9).
    ContextOverflow,
    /// The same payload would fail the same way (F-5.3, F-7.5a).
    Format,
    /// Surfaced to the runtime (F-7.5a).
    SessionExpired,
    /// No candidate is left (F-7.5: a final failure does not advance).
    Exhausted,
}

/// The next step of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Try the next profile of the same provider, after waiting this long.
    RotateProfile {
        wait_ms: u64,
    },
    /// Move to this chain position.
    Candidate {
        position: u32,
    },
    Stop(StopReason),
}

/// The step after a failed attempt.
///
/// Aborts that are not timeouts, context overflow, format errors and expired
/// sessions stop the run. A live-switch error pointing at a later candidate
/// jumps straight to it; otherwise it is treated as any failover error.
/// Credential failures (auth, revoked keys, billing) rotate through every
/// profile of the provider; rate limits and overloads rotate at most the
/// configured number of times (overloads after the configured wait);
/// transient timeouts rotate [`TIMEOUT_PROFILE_ROTATIONS`] times (F-12.1);
/// other failures — missing models, unrecognised errors — move to the next
/// model. A profile the user pinned is never rotated away from: the
/// run moves to the next model instead. With no candidate left, the run
/// stops.
pub fn next_step(attempt: &FailedAttempt, config: &RotationConfig) -> NextStep {
    use RecordedReason::*;
    if attempt.aborted && attempt.reason != Timeout {
        return NextStep::Stop(StopReason::Aborted);
    }
    match attempt.reason {
        ContextOverflow => return NextStep::Stop(StopReason::ContextOverflow),
        Format => return NextStep::Stop(StopReason::Format),
        SessionExpired => return NextStep::Stop(StopReason::SessionExpired),
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
            return NextStep::Candidate {
                position: u32::try_from(index).unwrap_or(u32::MAX),
            };
        }
    }
    let rotation = match attempt.reason {
        Auth | AuthPermanent | Billing => Some((u32::MAX, 0)),
        RateLimit => Some((config.rate_limited_profile_rotations, 0)),
        Overloaded => Some((
            config.overloaded_profile_rotations,
            config.overloaded_backoff_ms,
        )),
        Timeout => Some((TIMEOUT_PROFILE_ROTATIONS, 0)),
        _ => None,
    };
    if let Some((cap, wait_ms)) = rotation {
        if !attempt.user_pinned_profile && attempt.profiles_left > 0 && attempt.rotations < cap {
            return NextStep::RotateProfile { wait_ms };
        }
    }
    if (next as usize) < attempt.chain.len() {
        NextStep::Candidate { position: next }
    } else {
        NextStep::Stop(StopReason::Exhausted)
    }
}
