//! A candidate planned: its profiles ordered and the decision on it, as
//! `order-profiles` then `decide-candidate` give them. The host's rule
//! between the two — why each blocked profile is blocked — is here, so that
//! the default policy and the host apply the same one.

use crate::profiles::{record, OrderRequest, RankedProfile, RecordedReason, StoredProfile};
use crate::runner::{CandidateDecision, CandidateRequest, ModelHealth, ProfileBlock};

record! {
    /// What a candidate's decision needs besides its ranked profiles: a
    /// [`CandidateRequest`] without `ranked`, `blocks` and `now-ms` (those
    /// come from the order).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    #[cfg_attr(feature = "serde", serde(default))]
    pub struct CandidateFacts {
        /// The candidate is the chain's first.
        pub primary: bool,
        /// An earlier candidate of this run used the same provider (F-8.4).
        pub sibling: bool,
        /// The provider's last probe (the F-8.3 throttle).
        pub last_probe_at: Option<u64>,
        /// This run already made its transient probe of this provider (F-8.5).
        pub transient_probe_used: bool,
        /// Candidates come after this one (F-8.2).
        #[cfg_attr(feature = "serde", serde(alias = "hasFallbacks"))]
        pub later_candidates: bool,
        /// The model's health (F-12.3).
        pub health: ModelHealth,
    }
}

record! {
    /// A candidate's ranked profiles and the decision on it.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub struct CandidatePlan {
        /// `order-profiles`' answer.
        pub ranked: Vec<RankedProfile>,
        /// `decide-candidate`'s answer on that order.
        pub decision: CandidateDecision,
    }
}

impl CandidateFacts {
    /// The `decide-candidate` request for `order`'s answer `ranked`.
    pub fn request(&self, order: &OrderRequest, ranked: Vec<RankedProfile>) -> CandidateRequest {
        CandidateRequest {
            model: order.model.clone().unwrap_or_default(),
            primary: self.primary,
            sibling: self.sibling,
            blocks: profile_blocks(&order.stored, &ranked),
            ranked,
            last_probe_at: self.last_probe_at,
            transient_probe_used: self.transient_probe_used,
            later_candidates: self.later_candidates,
            health: self.health,
            now_ms: order.now_ms,
        }
    }
}

/// Why each blocked profile of `ranked` is blocked: until its
/// `blocked-until`, for the stored `disabled-reason` when the stored
/// `disabled-until` is that time, else the whole profile's or a model's
/// cooldown reason that ends then, else `unknown`. A profile not among
/// `stored` gets no block.
pub fn profile_blocks(stored: &[StoredProfile], ranked: &[RankedProfile]) -> Vec<ProfileBlock> {
    // Indexed by id only when something is blocked: a provider with
    // thousands of profiles must not cost a search per profile.
    if ranked.iter().all(|r| r.blocked_until.is_none()) {
        return Vec::new();
    }
    let by_id: std::collections::BTreeMap<&str, &StoredProfile> =
        stored.iter().map(|p| (p.id.as_str(), p)).collect();
    ranked
        .iter()
        .filter_map(|r| {
            let until = r.blocked_until?;
            let usage = &by_id.get(r.id.as_str())?.usage;
            let reason = if usage.disabled_until == Some(until) {
                usage.disabled_reason
            } else if usage.cooldown_until == Some(until) {
                usage.cooldown_reason
            } else {
                (usage.model_cooldowns.iter())
                    .find(|c| c.until == until)
                    .map(|c| c.reason)
            }
            .unwrap_or(RecordedReason::Unknown);
            Some(ProfileBlock {
                profile: r.id.clone(),
                reason,
                until,
            })
        })
        .collect()
}
