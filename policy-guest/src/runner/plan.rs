//! A candidate planned: its profiles ordered, then the decision on that
//! order — exactly `order-profiles` then `decide-candidate`, with the
//! host's rule for the blocks between them.

use policy_types::{CandidateFacts, CandidatePlan, OrderRequest};

use super::decide::decide_candidate;
use crate::profiles::order_profiles;

/// The order of `order`'s profiles and the decision on the candidate.
pub fn plan_candidate(order: &OrderRequest, facts: &CandidateFacts) -> CandidatePlan {
    let request = facts.request(order, order_profiles(order));
    let decision = decide_candidate(&request);
    CandidatePlan {
        ranked: request.ranked,
        decision,
    }
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
}
