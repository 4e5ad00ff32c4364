//! Whether to attempt, probe or skip a candidate whose profiles may all be
//! blocked (spec F-8.1 … F-8.5).

use crate::profiles::{RankedProfile, RecordedReason};

/// How long a provider's probes are throttled (F-8.3, ref 30 s).
pub const PROBE_THROTTLE_MS: u64 = 30_000;
/// How close to a cooldown's end the primary may be probed (F-8.3, ref 2 min).
pub const PROBE_MARGIN_MS: u64 = 2 * 60_000;

/// Why a blocked profile is blocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub profile: String,
    /// The reason of the window that ends last.
    pub reason: RecordedReason,
    pub until: u64,
}

/// A candidate about to be tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRequest {
    /// The candidate is the chain's first (the primary of this run).
    pub primary: bool,
    /// An earlier candidate of this run used the same provider (F-8.4).
    pub sibling: bool,
    /// `order-profiles` for this provider and model.
    pub ranked: Vec<RankedProfile>,
    /// Why each blocked profile is blocked.
    pub blocks: Vec<Block>,
    /// The provider's last probe, from the host's throttle state.
    pub last_probe_at: Option<u64>,
    /// This run already made its transient probe of this provider (F-8.5).
    pub transient_probe_used: bool,
    /// The chain has candidates besides this one: a billing-disabled primary
    /// is probed only then (F-8.2).
    pub has_fallbacks: bool,
    pub now_ms: u64,
}

/// What to do with a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CandidateDecision {
    /// Try these profiles, in order.
    Attempt(Vec<String>),
    /// Every profile is blocked; try this one anyway, once.
    Probe { profile: String, transient: bool },
    /// Skip the candidate; the reason of its soonest-free profile.
    Skip(RecordedReason),
}

/// The decision for one candidate.
///
/// With any profile available, attempt the available ones. With all
/// blocked: persistent auth failures skip the provider (F-8.1); the
/// primary is probed — throttled per provider — when its soonest window
/// ends within the margin: a billing disable only when the chain has
/// fallbacks, never hours ahead (F-8.2), a cooldown (F-8.3); a primary or a
/// same-provider sibling may be tried despite a transient cooldown (rate
/// limit, overload, unknown: F-8.4), at most once per provider per run
/// (F-8.5). Everything else is skipped.
pub fn decide_candidate(request: &CandidateRequest) -> CandidateDecision {
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
            if request.primary && near_end && throttle_open && request.has_fallbacks =>
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
