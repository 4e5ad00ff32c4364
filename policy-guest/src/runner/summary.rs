//! The summary of a run in which every candidate failed (spec F-10.3,
//! F-10.4).

use policy_types::{AttemptRecord, RunSummary, StoredProfile};

/// The summary of an exhausted chain.
///
/// The expiry is model-aware (F-10.4): for each attempted model, a profile
/// blocks it until the later of its disable and its cooldown — a cooldown
/// scoped to an unrelated model is ignored — and the model is ready when its
/// first profile is. The chain is ready when its first model is.
pub fn summarise(
    attempts: &[AttemptRecord],
    profiles: &[StoredProfile],
    now_ms: u64,
) -> RunSummary {
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
            return RunSummary {
                common_reason,
                ready_at: None,
            };
        }
        if let Some(until) = candidate_ready {
            ready_at = Some(ready_at.map_or(until, |r| r.min(until)));
        }
    }
    RunSummary {
        common_reason,
        ready_at,
    }
}
