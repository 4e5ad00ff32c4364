//! Whether to attempt, probe or skip a candidate: a slow model first
//! (F-12.3), then profiles that may all be blocked (spec F-8.1 … F-8.5).

use policy_types::{CandidateDecision, CandidateRequest, Gate, RecordedReason};

use super::health::model_gate;

/// How long a provider's probes are throttled (F-8.3, ref 30 s).
pub const PROBE_THROTTLE_MS: u64 = 30_000;
/// How close to a cooldown's end the primary may be probed (F-8.3, ref 2 min).
pub const PROBE_MARGIN_MS: u64 = 2 * 60_000;

/// The decision for one candidate: a slow model is skipped (as a timeout)
/// while later candidates remain and tried as a trial once its slow spell
/// is over (see [`model_gate`]); then its profiles decide, as
/// [`decide_profiles`] says.
pub fn decide_candidate(request: &CandidateRequest) -> CandidateDecision {
    let (gate, _) = model_gate(&request.health, request.later_candidates, request.now_ms);
    match (gate, decide_profiles(request)) {
        (Gate::Skip, _) => CandidateDecision::Skip(RecordedReason::Timeout),
        (Gate::Trial, CandidateDecision::Attempt(ids)) => CandidateDecision::Trial(ids),
        (_, decision) => decision,
    }
}

/// The decision on a candidate's profiles.
///
/// With any profile available, attempt the available ones. With all
/// blocked: persistent auth failures skip the provider (F-8.1); the
/// primary is probed — throttled per provider — when its soonest window
/// ends within the margin: a billing disable only when the chain has
/// fallbacks, never hours ahead (F-8.2), a cooldown (F-8.3); a primary or a
/// same-provider sibling may be tried despite a transient cooldown (rate
/// limit, overload, unknown: F-8.4), at most once per provider per run
/// (F-8.5). Everything else is skipped.
pub fn decide_profiles(request: &CandidateRequest) -> CandidateDecision {
    let available: Vec<String> = request
        .ranked
        .iter()
        .filter(|r| r.available)
        .map(|r| r.id.clone())
        .collect();
    if !available.is_empty() {
        return CandidateDecision::Attempt(available);
    }
    let Some(soonest) = request.ranked.first() else {
        return CandidateDecision::Skip(RecordedReason::Unknown);
    };
    let block = |id: &str| request.blocks.iter().find(|b| b.profile == id);
    let reason = block(&soonest.id).map_or(RecordedReason::Unknown, |b| b.reason);
    let until = soonest.blocked_until.unwrap_or(request.now_ms);
    let all_auth = request
        .ranked
        .iter()
        .all(|r| block(&r.id).is_some_and(|b| b.reason == RecordedReason::AuthPermanent));
    if all_auth {
        return CandidateDecision::Skip(RecordedReason::AuthPermanent);
    }
    let throttle_open = request
        .last_probe_at
        .is_none_or(|at| request.now_ms.saturating_sub(at) >= PROBE_THROTTLE_MS);
    let probe = |transient| CandidateDecision::Probe {
        profile: soonest.id.clone(),
        transient,
    };
    let near_end = until.saturating_sub(request.now_ms) <= PROBE_MARGIN_MS;
    match reason {
        RecordedReason::Billing
            if request.primary && near_end && throttle_open && request.later_candidates =>
        {
            probe(false)
        }
        RecordedReason::RateLimit | RecordedReason::Overloaded | RecordedReason::Unknown => {
            let may_probe = (request.primary && near_end && throttle_open) || request.sibling;
            if may_probe && !request.transient_probe_used {
                probe(true)
            } else {
                CandidateDecision::Skip(reason)
            }
        }
        _ => CandidateDecision::Skip(reason),
    }
}
