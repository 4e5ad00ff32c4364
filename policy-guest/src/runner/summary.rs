//! The summary of a run in which every candidate failed (spec F-10.3,
//! F-10.4).

use crate::profiles::{RecordedReason, StoredProfile};

/// One failed or skipped candidate of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    /// `provider/model`.
    pub model: String,
    /// The provider, aliases resolved.
    pub provider: String,
    pub reason: RecordedReason,
}

/// What a person is told about an exhausted chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The reason every attempt shared, if they shared one ("all models are
    /// rate-limited").
    pub common_reason: Option<RecordedReason>,
    /// When the soonest attempted candidate has a usable profile again; none
    /// when one already has, or when nothing blocks them (nothing to wait for).
    pub ready_at: Option<u64>,
}

/// The summary of an exhausted chain.
///
/// The expiry is model-aware (F-10.4): for each attempted model, a profile
/// blocks it until the later of its disable and its cooldown — a cooldown
/// scoped to an unrelated model is ignored — and the model is ready when its
/// first profile is. The chain is ready when its first model is.
pub fn summarise(attempts: &[AttemptRecord], profiles: &[StoredProfile], now_ms: u64) -> Summary {
    let common_reason = attempts
        .first()
        .map(|a| a.reason)
        .filter(|first| attempts.iter().all(|a| a.reason == *first));
    let mut ready_at: Option<u64> = None;
    for attempt in attempts {
        let mut candidate_ready: Option<u64> = None;
        let mut blocked_everywhere = true;
        for profile in profiles.iter().filter(|p| p.provider == attempt.provider) {
            match profile.usage.blocked_until(Some(&attempt.model), now_ms) {
                Some(until) => {
                    candidate_ready = Some(candidate_ready.map_or(until, |c| c.min(until)))
                }
                None => blocked_everywhere = false,
            }
        }
        if !blocked_everywhere {
            return Summary {
                common_reason,
                ready_at: None,
            };
        }
        if let Some(until) = candidate_ready {
            ready_at = Some(ready_at.map_or(until, |r| r.min(until)));
        }
    }
    Summary {
        common_reason,
        ready_at,
    }
}
