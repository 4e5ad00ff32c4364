//! A candidate planned: `order-profiles`, then `decide-candidate` on its
//! answer, the blocks between them by the host's rule.

use policy_types::{CandidateFacts, CandidatePlan, OrderRequest};

use super::decider::Decider;
use super::error::PolicyError;

/// `order-profiles`, then `decide-candidate` on its answer, asked of
/// `decider`.
pub fn plan_by_two_calls(
    decider: &(impl Decider + ?Sized),
    order: &OrderRequest,
    facts: &CandidateFacts,
) -> Result<CandidatePlan, PolicyError> {
    let request = facts.request(order, decider.order_profiles(order)?);
    let decision = decider.decide_candidate(&request)?;
    Ok(CandidatePlan {
        ranked: request.ranked,
        decision,
    })
}
