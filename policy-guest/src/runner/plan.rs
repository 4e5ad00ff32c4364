//! A candidate planned in one call (contract 0.6.0): its profiles ordered,
//! then the decision on that order — exactly `order-profiles` then
//! `decide-candidate`, with the host's rule for the blocks between them —
//! and (0.7.0) where else that answer holds.

use policy_types::{CandidateFacts, CandidatePlan, CredentialKind, OrderRequest, PlanHold};

use super::decide::{decide_candidate, PROBE_MARGIN_MS, PROBE_THROTTLE_MS};
use crate::profiles::order_profiles;

/// Longest a plan claims to hold: the contract's bound, a week.
const MAX_HOLD_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// The order of `order`'s profiles and the decision on the candidate.
pub fn plan_candidate(order: &OrderRequest, facts: &CandidateFacts) -> CandidatePlan {
    let request = facts.request(order, order_profiles(order));
    let decision = decide_candidate(&request);
    CandidatePlan {
        ranked: request.ranked,
        decision,
        holds: plan_hold(order, facts),
    }
}

/// Where the plan for `order` and `facts` holds: until the first time
/// anything it reads changes its mind, and whatever the `last-used` values
/// unless they decide an order.
///
/// The clock enters the order and the decision only by comparisons with
/// times of the input: a credential's expiry, a cooldown's or disable's
/// end (and, for the probe margin, that end less [`PROBE_MARGIN_MS`]), the
/// last probe plus [`PROBE_THROTTLE_MS`]; another provider's profiles are
/// never read. Before the soonest of those after `now-ms`, every
/// comparison comes out as it did. `last-used` only sorts
/// two profiles of one kind when no explicit order is given.
fn plan_hold(order: &OrderRequest, facts: &CandidateFacts) -> PlanHold {
    let now = order.now_ms;
    let served = order.stored.iter().filter(|p| p.provider == order.provider);
    let ends = served.flat_map(|p| {
        let usage = &p.usage;
        let windows = [usage.cooldown_until, usage.disabled_until];
        let margins = windows.map(|end| end.map(|end| end.saturating_sub(PROBE_MARGIN_MS)));
        [p.expires].into_iter().chain(windows).chain(margins)
    });
    let throttle = facts
        .last_probe_at
        .map(|at| at.saturating_add(PROBE_THROTTLE_MS));
    let until = ends
        .chain([throttle])
        .flatten()
        .filter(|&at| at > now)
        .min()
        .unwrap_or(u64::MAX)
        .min(now.saturating_add(MAX_HOLD_MS));
    PlanHold {
        until,
        reads_last_used: reads_last_used(order),
    }
}

/// Whether `last-used` may decide `order`'s answer: without an explicit
/// order, when two of the provider's stored profiles are of one kind.
fn reads_last_used(order: &OrderRequest) -> bool {
    if order.explicit_order.as_ref().is_some_and(|o| !o.is_empty()) {
        return false;
    }
    let mut kinds = [0usize; 3];
    for profile in order.stored.iter().filter(|p| p.provider == order.provider) {
        let slot = match profile.kind {
            CredentialKind::OAuth => 0,
            CredentialKind::Token => 1,
            CredentialKind::ApiKey => 2,
        };
        kinds[slot] += 1;
    }
    kinds.iter().any(|&count| count > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_types::{CandidateDecision, CredentialKind, RecordedReason, StoredProfile, Usage};

    const NOW: u64 = 1_767_225_600_000;

    fn stored(id: &str, usage: Usage) -> StoredProfile {
        StoredProfile {
            id: id.into(),
            provider: "openai".into(),
            kind: CredentialKind::ApiKey,
            expires: None,
            refreshable: false,
            usage,
        }
    }

    #[test]
    fn a_plan_is_the_order_then_the_decision_on_it() {
        let order = OrderRequest {
            provider: "openai".into(),
            stored: vec![
                stored("openai:a", Usage::default()),
                stored(
                    "openai:b",
                    Usage {
                        cooldown_until: Some(NOW + 60_000),
                        cooldown_reason: Some(RecordedReason::RateLimit),
                        ..Usage::default()
                    },
                ),
            ],
            now_ms: NOW,
            ..OrderRequest::default()
        };
        let facts = CandidateFacts {
            primary: true,
            ..CandidateFacts::default()
        };
        let plan = plan_candidate(&order, &facts);
        assert_eq!(plan.ranked, order_profiles(&order));
        assert_eq!(
            plan.decision,
            CandidateDecision::Attempt(vec!["openai:a".into()])
        );
        // Every profile blocked: the decision reads the blocks' reasons.
        let blocked = OrderRequest {
            stored: order.stored[1..].to_vec(),
            ..order.clone()
        };
        let plan = plan_candidate(&blocked, &facts);
        let request = facts.request(&blocked, plan.ranked.clone());
        assert_eq!(request.blocks[0].reason, RecordedReason::RateLimit);
        assert_eq!(plan.decision, decide_candidate(&request));
    }

    #[test]
    fn a_plan_holds_until_the_soonest_time_that_can_change_it() {
        let cooled = |until| Usage {
            cooldown_until: Some(until),
            cooldown_reason: Some(RecordedReason::RateLimit),
            ..Usage::default()
        };
        let order = |stored| OrderRequest {
            provider: "openai".into(),
            stored,
            now_ms: NOW,
            ..OrderRequest::default()
        };
        let facts = CandidateFacts::default();
        // Nothing timed: a week, the contract's bound; one key of its kind.
        let idle = plan_candidate(&order(vec![stored("openai:a", Usage::default())]), &facts);
        assert_eq!(
            idle.holds,
            PlanHold {
                until: NOW + MAX_HOLD_MS,
                reads_last_used: false
            }
        );
        // A cooldown an hour ahead: the probe margin opens 2 min before it.
        let hour = NOW + 3_600_000;
        let cooling = order(vec![
            stored("openai:a", Usage::default()),
            stored("openai:b", cooled(hour)),
        ]);
        let plan = plan_candidate(&cooling, &facts);
        assert_eq!(plan.holds.until, hour - PROBE_MARGIN_MS);
        assert!(
            plan.holds.reads_last_used,
            "two keys are ordered by last use"
        );
        // Inside the margin, the cooldown's end; a recent probe, its throttle.
        let near = order(vec![stored("openai:b", cooled(NOW + 60_000))]);
        assert_eq!(plan_candidate(&near, &facts).holds.until, NOW + 60_000);
        let probed = CandidateFacts {
            last_probe_at: Some(NOW - 10_000),
            ..facts.clone()
        };
        assert_eq!(
            plan_candidate(&near, &probed).holds.until,
            NOW - 10_000 + PROBE_THROTTLE_MS
        );
        // An explicit order is not sorted by last use.
        let explicit = OrderRequest {
            explicit_order: Some(vec!["openai:b".into(), "openai:a".into()]),
            ..cooling
        };
        assert!(!plan_candidate(&explicit, &facts).holds.reads_last_used);
        // A credential that expires: until it does.
        let mut expiring = stored("openai:a", Usage::default());
        expiring.expires = Some(NOW + 5_000);
        let plan = plan_candidate(&order(vec![expiring]), &facts);
        assert_eq!(plan.holds.until, NOW + 5_000);
    }
}
