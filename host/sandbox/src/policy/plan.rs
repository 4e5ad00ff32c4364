//! A candidate planned in one call (contract 0.6.0): `plan-candidate`
//! orders its profiles and decides on it, checked as `order-profiles` and
//! `decide-candidate` are. A module of an earlier contract gets the two
//! calls instead.

use policy_types::{CandidateFacts, CandidatePlan, Mirror, OrderRequest};

use super::bindings::Guest;
use super::decider::Decider;
use super::error::PolicyError;
use super::module::Policy;
use super::profiles::{checked_ranked, for_provider, sent_ids};
use super::runner::checked_decision;

impl Policy {
    /// The order of a candidate's profiles and the decision on it: one
    /// `plan-candidate` call for a module of the current contract (sent
    /// only the profiles an answer can depend on, as `order-profiles` is),
    /// `order-profiles` then `decide-candidate` for an earlier one.
    pub fn plan_candidate(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        if !self.contract().plans_candidates() {
            return plan_by_two_calls(self, order, facts);
        }
        let stored_sent = sent_ids(order);
        let sent = for_provider(order, &stored_sent);
        let plan: CandidatePlan = self.call("plan-candidate", |store, guest| match guest {
            Guest::Current(g) => g
                .failover_policy_runner()
                .call_plan_candidate(store, &sent.mirror(), facts.clone().mirror())
                .map(Mirror::mirror),
            Guest::V0_5(_) | Guest::V0_4(_) => Err(wasmtime::format_err!(
                "a module before 0.6.0 has no plan-candidate"
            )),
        })?;
        checked_ranked("plan-candidate", &plan.ranked, &stored_sent)?;
        checked_decision("plan-candidate", &plan.decision, &plan.ranked)?;
        Ok(plan)
    }
}

/// `order-profiles`, then `decide-candidate` on its answer: what
/// `plan-candidate` stands for, asked of `decider` in two calls.
pub fn plan_by_two_calls(
    decider: &(impl Decider + ?Sized),
    order: &OrderRequest,
    facts: &CandidateFacts,
) -> Result<CandidatePlan, PolicyError> {
    let ranked = decider.order_profiles(order)?;
    let decision = decider.decide_candidate(&facts.request(order, ranked.clone()))?;
    Ok(CandidatePlan { ranked, decision })
}
