//! Session stickiness (spec F-4.4 … F-4.6).

use super::{PinDecision, PinRequest, PinSource, RankedProfile};

/// The profile a session should use for its next run.
///
/// A pinned profile is kept to keep provider caches warm (F-4.4) until the
/// session starts over (`/new`, `/reset`), a compaction completes, or the
/// profile is blocked. Starting over or compacting moves to the next
/// available profile after the current one; a blocked pin moves to the first
/// available; with everything blocked, the soonest free. A user's pin
/// (`/model …@profile`, F-4.5) is kept, blocked or not, until the session
/// starts over. An automatic pin is only a preference (F-4.6): a run may
/// rotate away from it without changing it.
pub fn pin_profile(request: &PinRequest) -> PinDecision {
    let ranked = &request.ranked;
    let now_count = request.compaction_count;
    let current = request
        .current
        .as_deref()
        .and_then(|id| ranked.iter().position(|r| r.id == id));
    let repin = |choice: Option<&RankedProfile>| PinDecision {
        profile: choice.map(|r| r.id.clone()),
        source: PinSource::Auto,
        compaction_count: now_count,
    };
    let keep = |index: usize, source: PinSource| PinDecision {
        profile: Some(ranked[index].id.clone()),
        source,
        compaction_count: request.pinned_at_compaction.unwrap_or(now_count),
    };
    let first_available = || ranked.iter().find(|r| r.available).or(ranked.first());

    let Some(index) = current else {
        return repin(first_available());
    };
    if request.source == Some(PinSource::User) && !request.session_reset {
        return keep(index, PinSource::User);
    }
    let compacted = request
        .pinned_at_compaction
        .is_some_and(|pinned| now_count > pinned);
    if request.session_reset || compacted {
        let after = ranked[index + 1..].iter().chain(&ranked[..index]);
        let next = after
            .clone()
            .find(|r| r.available)
            .or_else(|| ranked[index].available.then_some(&ranked[index]))
            .or(ranked.first());
        return repin(next);
    }
    if ranked[index].available {
        keep(index, request.source.unwrap_or(PinSource::Auto))
    } else {
        repin(first_available())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(entries: &[(&str, bool)]) -> Vec<RankedProfile> {
        entries
            .iter()
            .map(|(id, available)| RankedProfile {
                id: (*id).into(),
                available: *available,
                blocked_until: (!available).then_some(1),
            })
            .collect()
    }

    #[test]
    fn compaction_moves_to_the_next_available_profile() {
        let request = PinRequest {
            ranked: ranked(&[("p:a", true), ("p:b", true), ("p:c", true)]),
            current: Some("p:b".into()),
            source: Some(PinSource::Auto),
            pinned_at_compaction: Some(1),
            compaction_count: 2,
            session_reset: false,
        };
        let decision = pin_profile(&request);
        assert_eq!(decision.profile.as_deref(), Some("p:c"));
        assert_eq!(decision.compaction_count, 2);
    }

    #[test]
    fn an_empty_order_pins_nothing() {
        assert_eq!(pin_profile(&PinRequest::default()).profile, None);
    }
}
