//! A candidate planned in one call (contract 0.6.0): `plan-candidate`
//! orders its profiles and decides on it, checked as `order-profiles` and
//! `decide-candidate` are. A module of an earlier contract gets the two
//! calls instead. From 0.7.0 on, a plan that holds for the question is
//! answered from those kept (see [`super::plan_memo`]).

use policy_types::{CandidateFacts, CandidatePlan, Mirror, OrderRequest, PlanHold};

use super::bindings::{current, v0_6, v0_7, Guest};
use super::decider::Decider;
use super::error::PolicyError;
use super::module::Policy;
use super::plan_memo::QuestionKey;
use super::profiles::{checked_ranked, for_provider_ids, MAX_WINDOW_MS};
use super::runner::checked_decision;

impl Policy {
    /// The order of a candidate's profiles and the decision on it: one
    /// `plan-candidate` call for a module of the current contract (sent
    /// only the profiles an answer can depend on, as `order-profiles` is),
    /// `order-profiles` then `decide-candidate` for an earlier one; a kept
    /// plan when one holds for the question (0.7.0).
    pub fn plan_candidate(
        &self,
        order: OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        if !self.contract().plans_candidates() {
            return plan_by_two_calls(self, &order, facts);
        }
        let order = narrowed(order);
        if !self.contract().plans_hold() {
            return self.plan_by_call(order, facts);
        }
        let key = QuestionKey::of(&order, facts);
        if let Some(plan) = self.plans.get(key, &order, facts) {
            return Ok(plan);
        }
        let plan = self.plan_by_call(order.clone(), facts)?;
        self.plans.keep(key, order, facts.clone(), plan.clone());
        Ok(plan)
    }

    /// One `plan-candidate` call, checked, whatever plans are kept: what
    /// the gate asks of a module of 0.6.0 on.
    pub(super) fn ask_plan_candidate(
        &self,
        order: OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        self.plan_by_call(narrowed(order), facts)
    }

    /// One `plan-candidate` call on a narrowed `order`, checked. The order
    /// is taken, not borrowed: its profiles cross without a copy.
    fn plan_by_call(
        &self,
        order: OrderRequest,
        facts: &CandidateFacts,
    ) -> Result<CandidatePlan, PolicyError> {
        let now = order.now_ms;
        let sent: current::OrderRequest = order.mirror();
        let plan: CandidatePlan = self.call("plan-candidate", |store, guest| match guest {
            Guest::Current(g) => g
                .failover_policy_runner()
                .call_plan_candidate(store, &sent, facts.clone().mirror())
                .map(Mirror::mirror),
            Guest::V0_7(g) => {
                let sent: v0_7::exports::failover::policy::types::OrderRequest =
                    Mirror::<OrderRequest>::mirror(sent.clone()).mirror();
                g.failover_policy_runner()
                    .call_plan_candidate(store, &sent, facts.clone().mirror())
                    .map(Mirror::mirror)
            }
            Guest::V0_6(g) => {
                let sent: v0_6::exports::failover::policy::types::OrderRequest =
                    Mirror::<OrderRequest>::mirror(sent.clone()).mirror();
                g.failover_policy_runner()
                    .call_plan_candidate(store, &sent, facts.clone().mirror())
                    .map(Mirror::mirror)
            }
            Guest::V0_5(_) | Guest::V0_4(_) => Err(wasmtime::format_err!(
                "a module before 0.6.0 has no plan-candidate"
            )),
        })?;
        let stored_sent = sent.stored.iter().map(|p| p.id.as_str()).collect();
        checked_ranked("plan-candidate", &plan.ranked, &stored_sent)?;
        checked_decision("plan-candidate", &plan.decision, &plan.ranked)?;
        if plan.holds.until > now.saturating_add(MAX_WINDOW_MS) {
            return Err(PolicyError::InvalidOutput {
                call: "plan-candidate",
                problem: format!(
                    "holds.until {} is more than a week after now-ms {now}",
                    plan.holds.until
                ),
            });
        }
        Ok(plan)
    }
}

/// `order` with only what concerns its provider (see
/// [`for_provider`](super::profiles::for_provider)),
/// its profiles moved rather than copied; as it came when it has nothing
/// else (a host that narrows sends it so).
fn narrowed(mut order: OrderRequest) -> OrderRequest {
    let (keep_stored, keep_configured): (Vec<bool>, Vec<bool>) = {
        let narrow = for_provider_ids(&order);
        // The usual order, all of one provider, is sent as it came,
        // without the two lists of what to keep.
        let keeps_all = (order.stored.iter()).all(|p| narrow.keeps(&p.id, &p.provider))
            && (order.configured.iter()).all(|c| narrow.configured(c));
        if keeps_all {
            return order;
        }
        (
            (order.stored.iter())
                .map(|p| narrow.keeps(&p.id, &p.provider))
                .collect(),
            (order.configured.iter())
                .map(|c| narrow.configured(c))
                .collect(),
        )
    };
    let mut keep = keep_stored.into_iter();
    order.stored.retain(|_| keep.next().unwrap_or(false));
    let mut keep = keep_configured.into_iter();
    order.configured.retain(|_| keep.next().unwrap_or(false));
    order
}

/// `order-profiles`, then `decide-candidate` on its answer: what
/// `plan-candidate` stands for, asked of `decider` in two calls. Two
/// answers say nothing of where else they hold: [`PlanHold::ONLY_NOW`].
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
        holds: PlanHold::ONLY_NOW,
    })
}
