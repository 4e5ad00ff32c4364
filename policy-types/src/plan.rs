//! A candidate planned in one call (contract 0.6.0): its profiles ordered
//! and the decision on it, as `order-profiles` then `decide-candidate`
//! would give them; from 0.7.0 on, with how long that answer holds. The host's rule between the two — why each blocked
//! profile is blocked — is here, so that a module and the host apply the
//! same one.

use crate::profiles::{record, OrderRequest, RankedProfile, RecordedReason, StoredProfile};
use crate::runner::{CandidateDecision, CandidateRequest, ProfileBlock};

record! {
    /// What a candidate's decision needs besides its ranked profiles: a
    /// [`CandidateRequest`] without `ranked`, `blocks` and `now-ms` (those
    /// come from the order).
    #[derive(Debug, Clone, PartialEq, Eq, Default)]
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
        /// The chain has other candidates (F-8.2).
        pub has_fallbacks: bool,
    }
}

record! {
    /// A candidate's ranked profiles and the decision on it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CandidatePlan {
        /// `order-profiles`' answer.
        pub ranked: Vec<RankedProfile>,
        /// `decide-candidate`'s answer on that order.
        pub decision: CandidateDecision,
        /// Which other inputs give the same answer (0.7.0; a module of an
        /// earlier contract says none: [`PlanHold::ONLY_NOW`]).
        #[cfg_attr(feature = "serde", serde(default))]
        pub holds: PlanHold,
    }
}

record! {
    /// Where a plan's answer holds besides its own input (contract 0.7.0):
    /// the same order and facts give the same `ranked` and `decision` at
    /// any `now-ms` from the order's up to (not including) `until`, and —
    /// unless `reads-last-used` — whatever the profiles' `last-used` are.
    /// What lets the host keep a plan across requests: a success moves
    /// only the clock and a `last-used`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct PlanHold {
        /// The first time the answer may differ; at or before the order's
        /// `now-ms`, it holds at that time only.
        pub until: u64,
        /// The answer may change with a profile's `last-used`.
        pub reads_last_used: bool,
    }
}

impl PlanHold {
    /// A plan that holds for its own input only: what a module that says
    /// nothing (before 0.7.0, or the host's two calls) is taken to mean.
    pub const ONLY_NOW: PlanHold = PlanHold {
        until: 0,
        reads_last_used: true,
    };

    /// Whether the plan decided at `decided_at` still holds at `now`.
    pub fn holds_at(&self, decided_at: u64, now: u64) -> bool {
        decided_at <= now && now < self.until
    }
}

impl Default for PlanHold {
    fn default() -> Self {
        PlanHold::ONLY_NOW
    }
}

impl CandidateFacts {
    /// The `decide-candidate` request for the order `order` answered with
    /// `ranked`.
    pub fn request(&self, order: &OrderRequest, ranked: Vec<RankedProfile>) -> CandidateRequest {
        CandidateRequest {
            primary: self.primary,
            sibling: self.sibling,
            blocks: profile_blocks(&order.stored, &ranked),
            ranked,
            last_probe_at: self.last_probe_at,
            transient_probe_used: self.transient_probe_used,
            has_fallbacks: self.has_fallbacks,
            now_ms: order.now_ms,
        }
    }
}

/// Why each blocked profile of `ranked` is blocked: until its
/// `blocked-until`, for the stored `disabled-reason` when the stored
/// `disabled-until` is that time, else the stored `cooldown-reason`, else
/// `unknown`. A profile not among `stored` gets no block.
pub fn profile_blocks(stored: &[StoredProfile], ranked: &[RankedProfile]) -> Vec<ProfileBlock> {
    ranked
        .iter()
        .filter_map(|r| {
            let until = r.blocked_until?;
            let usage = &stored.iter().find(|p| p.id == r.id)?.usage;
            let reason = if usage.disabled_until == Some(until) {
                usage.disabled_reason
            } else {
                usage.cooldown_reason
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
