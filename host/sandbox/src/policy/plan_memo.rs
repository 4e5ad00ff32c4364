//! Plans kept across requests (contract 0.7.0).
//!
//! A gateway asks `plan-candidate` the same question for every request of
//! a model: between two successes only the clock and the served profile's
//! `last-used` move. A 0.7.0 plan says where else its answer holds (see
//! [`PlanHold`]), so the host keeps the checked plan and answers a
//! question it covers without a call. Kept per module (a swapped-in module
//! starts empty), one plan per question, a few dozen questions.

use std::sync::{Mutex, MutexGuard, PoisonError};

use policy_types::{CandidateFacts, CandidatePlan, OrderRequest, StoredProfile, Usage};

/// How many questions are kept: a gateway's providers and models, each
/// as a primary and as a fallback, with room. The oldest goes first.
const KEPT: usize = 64;

/// A checked plan and the question it answered.
#[derive(Debug)]
struct Kept {
    order: OrderRequest,
    facts: CandidateFacts,
    plan: CandidatePlan,
}

/// Checked plans by question.
#[derive(Debug, Default)]
pub(crate) struct PlanMemo {
    entries: Mutex<Vec<Kept>>,
}

impl PlanMemo {
    /// The kept plan that holds for `order` and `facts`, if one does.
    pub(crate) fn get(
        &self,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Option<CandidatePlan> {
        let entries = self.lock();
        let kept = entries.iter().find(|kept| {
            let holds = kept.plan.holds;
            holds.holds_at(kept.order.now_ms, order.now_ms)
                && kept.facts == *facts
                && same_question(&kept.order, order, holds.reads_last_used)
        })?;
        Some(kept.plan.clone())
    }

    /// Keeps `plan`, the checked answer to `order` and `facts`, in place
    /// of any plan kept for the same question at another time or
    /// `last-used`. A plan that holds for its own input only is not kept.
    pub(crate) fn keep(&self, order: OrderRequest, facts: CandidateFacts, plan: CandidatePlan) {
        if plan.holds.until <= order.now_ms {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|kept| !(kept.facts == facts && same_question(&kept.order, &order, false)));
        if entries.len() == KEPT {
            entries.remove(0);
        }
        entries.push(Kept { order, facts, plan });
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Kept>> {
        // Plain data, changed in single steps: a poisoned lock is still sound.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whether `a` and `b` ask the same but for `now-ms`, and but for the
/// profiles' `last-used` unless `with_last_used`.
fn same_question(a: &OrderRequest, b: &OrderRequest, with_last_used: bool) -> bool {
    let OrderRequest {
        provider,
        explicit_order,
        configured,
        stored,
        model,
        now_ms: _,
    } = a;
    *provider == b.provider
        && *explicit_order == b.explicit_order
        && *configured == b.configured
        && *model == b.model
        && stored.len() == b.stored.len()
        && (stored.iter().zip(&b.stored)).all(|(a, b)| same_profile(a, b, with_last_used))
}

fn same_profile(a: &StoredProfile, b: &StoredProfile, with_last_used: bool) -> bool {
    let StoredProfile {
        id,
        provider,
        kind,
        expires,
        refreshable,
        usage,
    } = a;
    *id == b.id
        && *provider == b.provider
        && *kind == b.kind
        && *expires == b.expires
        && *refreshable == b.refreshable
        && same_usage(usage, &b.usage, with_last_used)
}

fn same_usage(a: &Usage, b: &Usage, with_last_used: bool) -> bool {
    let Usage {
        last_used,
        cooldown_until,
        cooldown_reason,
        cooldown_model,
        disabled_until,
        disabled_reason,
        error_count,
        failure_counts,
        last_failure_at,
    } = a;
    (!with_last_used || *last_used == b.last_used)
        && *cooldown_until == b.cooldown_until
        && *cooldown_reason == b.cooldown_reason
        && *cooldown_model == b.cooldown_model
        && *disabled_until == b.disabled_until
        && *disabled_reason == b.disabled_reason
        && *error_count == b.error_count
        && *failure_counts == b.failure_counts
        && *last_failure_at == b.last_failure_at
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_types::{CandidateDecision, CredentialKind, PlanHold, RankedProfile};

    const NOW: u64 = 1_767_225_600_000;

    fn order(last_used: Option<u64>, now_ms: u64) -> OrderRequest {
        OrderRequest {
            provider: "openai".into(),
            stored: vec![StoredProfile {
                id: "openai:a".into(),
                provider: "openai".into(),
                kind: CredentialKind::ApiKey,
                expires: None,
                refreshable: false,
                usage: Usage {
                    last_used,
                    ..Usage::default()
                },
            }],
            now_ms,
            ..OrderRequest::default()
        }
    }

    fn plan(until: u64, reads_last_used: bool) -> CandidatePlan {
        CandidatePlan {
            ranked: vec![RankedProfile {
                id: "openai:a".into(),
                available: true,
                blocked_until: None,
            }],
            decision: CandidateDecision::Attempt(vec!["openai:a".into()]),
            holds: PlanHold {
                until,
                reads_last_used,
            },
        }
    }

    #[test]
    fn a_plan_answers_inside_its_range_and_nowhere_else() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        memo.keep(order(Some(1), NOW), facts.clone(), plan(NOW + 100, false));
        let kept = plan(NOW + 100, false);
        assert_eq!(memo.get(&order(Some(1), NOW), &facts), Some(kept.clone()));
        // Later, and with another `last-used`: it says it does not read it.
        assert_eq!(memo.get(&order(Some(9), NOW + 99), &facts), Some(kept));
        // At its end, before its start, with other facts, for another usage.
        assert_eq!(memo.get(&order(Some(1), NOW + 100), &facts), None);
        assert_eq!(memo.get(&order(Some(1), NOW - 1), &facts), None);
        let probed = CandidateFacts {
            last_probe_at: Some(NOW),
            ..CandidateFacts::default()
        };
        assert_eq!(memo.get(&order(Some(1), NOW), &probed), None);
        let mut cooled = order(Some(1), NOW);
        cooled.stored[0].usage.cooldown_until = Some(NOW + 50);
        assert_eq!(memo.get(&cooled, &facts), None);
    }

    #[test]
    fn a_plan_that_reads_last_used_answers_only_for_the_same_values() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        memo.keep(order(Some(1), NOW), facts.clone(), plan(NOW + 100, true));
        assert!(memo.get(&order(Some(1), NOW + 50), &facts).is_some());
        assert_eq!(memo.get(&order(Some(2), NOW + 50), &facts), None);
    }

    #[test]
    fn a_newer_plan_replaces_the_one_for_the_same_question_and_a_plan_for_now_only_is_not_kept() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        memo.keep(order(Some(1), NOW), facts.clone(), plan(NOW + 100, true));
        memo.keep(
            order(Some(2), NOW + 10),
            facts.clone(),
            plan(NOW + 200, true),
        );
        assert_eq!(memo.lock().len(), 1);
        assert_eq!(memo.get(&order(Some(1), NOW + 20), &facts), None);
        assert!(memo.get(&order(Some(2), NOW + 150), &facts).is_some());
        memo.keep(order(None, NOW), facts.clone(), plan(NOW, true));
        memo.keep(order(None, NOW), facts.clone(), plan(0, true));
        assert_eq!(memo.lock().len(), 1);
    }

    #[test]
    fn the_oldest_question_goes_when_full() {
        let memo = PlanMemo::default();
        let facts = |at: usize| CandidateFacts {
            last_probe_at: Some(at as u64),
            ..CandidateFacts::default()
        };
        for at in 0..=KEPT {
            memo.keep(order(None, NOW), facts(at), plan(NOW + 100, false));
        }
        assert_eq!(memo.lock().len(), KEPT);
        assert_eq!(memo.get(&order(None, NOW), &facts(0)), None);
        assert!(memo.get(&order(None, NOW), &facts(KEPT)).is_some());
    }
}
