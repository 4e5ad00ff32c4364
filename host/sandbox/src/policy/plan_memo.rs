//! Plans kept across requests (contract 0.7.0).
//!
//! A gateway asks `plan-candidate` the same question for every request of
//! a model: between two successes only the clock and the served profile's
//! `last-used` move. A 0.7.0 plan says where else its answer holds (see
//! [`PlanHold`]), so the host keeps the checked plan and answers a
//! question it covers without a call. Kept per module (a swapped-in module
//! starts empty), one plan per question, a few dozen questions.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard, PoisonError};

use policy_types::{
    CandidateFacts, CandidatePlan, ConfiguredProfile, CredentialKind, OrderRequest, RecordedReason,
    StoredProfile, Usage,
};
use rustc_hash::FxHasher;

/// How many questions are kept: a gateway's providers and models, each
/// as a primary and as a fallback, with room. The oldest goes first.
const KEPT: usize = 64;

/// A question's fingerprint: a hash of all [`same_question`] and the
/// facts compare but `now-ms` and the profiles' `last-used`. Kept plans
/// are compared in full only when their fingerprint matches: a replay
/// keeps dozens of questions of one provider, alike up to some profile's
/// usage, and comparing each in full was costlier than the call a hit
/// saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QuestionKey(u64);

impl QuestionKey {
    /// The fingerprint of `order` and `facts`.
    pub(crate) fn of(order: &OrderRequest, facts: &CandidateFacts) -> QuestionKey {
        let mut hasher = FxHasher::default();
        let OrderRequest {
            provider,
            explicit_order,
            configured,
            stored,
            model,
            now_ms: _,
        } = order;
        (provider, explicit_order, model).hash(&mut hasher);
        for ConfiguredProfile { id, provider, mode } in configured {
            (id, provider, mode).hash(&mut hasher);
        }
        stored.len().hash(&mut hasher);
        for profile in stored {
            hash_profile(profile, &mut hasher);
        }
        let CandidateFacts {
            primary,
            sibling,
            last_probe_at,
            transient_probe_used,
            has_fallbacks,
        } = facts;
        (
            primary,
            sibling,
            last_probe_at,
            transient_probe_used,
            has_fallbacks,
        )
            .hash(&mut hasher);
        QuestionKey(hasher.finish())
    }
}

fn hash_profile(profile: &StoredProfile, hasher: &mut FxHasher) {
    profile_parts(profile).hash(hasher);
}

/// What of a profile a question is: all of it but `last-used` (compared
/// apart, when a plan read it). Hashed for a [`QuestionKey`] and compared
/// by [`same_profile`], so the two cannot disagree on what counts.
type ProfileParts<'a> = (
    (&'a str, &'a str, CredentialKind, Option<u64>, bool),
    UsageParts<'a>,
);

/// [`ProfileParts`]' share of the usage.
type UsageParts<'a> = (
    (
        Option<u64>,
        Option<RecordedReason>,
        Option<&'a str>,
        Option<u64>,
    ),
    (
        Option<RecordedReason>,
        u32,
        &'a BTreeMap<RecordedReason, u32>,
        Option<u64>,
    ),
);

fn profile_parts(profile: &StoredProfile) -> ProfileParts<'_> {
    let StoredProfile {
        id,
        provider,
        kind,
        expires,
        refreshable,
        usage,
    } = profile;
    let Usage {
        last_used: _,
        cooldown_until,
        cooldown_reason,
        cooldown_model,
        disabled_until,
        disabled_reason,
        error_count,
        failure_counts,
        last_failure_at,
    } = usage;
    (
        (id, provider, *kind, *expires, *refreshable),
        (
            (
                *cooldown_until,
                *cooldown_reason,
                cooldown_model.as_deref(),
                *disabled_until,
            ),
            (
                *disabled_reason,
                *error_count,
                failure_counts,
                *last_failure_at,
            ),
        ),
    )
}

/// A checked plan and the question it answered.
#[derive(Debug)]
struct Kept {
    key: QuestionKey,
    order: OrderRequest,
    facts: CandidateFacts,
    plan: CandidatePlan,
}

/// Checked plans by question, oldest first. Each is boxed: replacing or
/// dropping one then moves pointers, not the plans (a few hundred bytes
/// each, sixty-four of them: the moves were most of a miss's cost).
#[derive(Debug, Default)]
pub(crate) struct PlanMemo {
    #[allow(clippy::vec_box)] // Boxed to move pointers, not plans (above).
    entries: Mutex<Vec<Box<Kept>>>,
}

impl PlanMemo {
    /// The kept plan that holds for `order` and `facts`, if one does.
    /// `key` is their [`QuestionKey`].
    pub(crate) fn get(
        &self,
        key: QuestionKey,
        order: &OrderRequest,
        facts: &CandidateFacts,
    ) -> Option<CandidatePlan> {
        let entries = self.lock();
        let kept = entries.iter().find(|kept| {
            let holds = kept.plan.holds;
            kept.key == key
                && holds.holds_at(kept.order.now_ms, order.now_ms)
                && kept.facts == *facts
                && same_question(&kept.order, order, holds.reads_last_used)
        })?;
        Some(kept.plan.clone())
    }

    /// Keeps `plan`, the checked answer to `order` and `facts`, in place
    /// of any plan kept for the same question at another time or
    /// `last-used`. A plan that holds for its own input only is not kept.
    /// `key` is their [`QuestionKey`].
    pub(crate) fn keep(
        &self,
        key: QuestionKey,
        order: OrderRequest,
        facts: CandidateFacts,
        plan: CandidatePlan,
    ) {
        if plan.holds.until <= order.now_ms {
            return;
        }
        let mut entries = self.lock();
        entries.retain(|kept| {
            !(kept.key == key && kept.facts == facts && same_question(&kept.order, &order, false))
        });
        if entries.len() == KEPT {
            entries.remove(0);
        }
        entries.push(Box::new(Kept {
            key,
            order,
            facts,
            plan,
        }));
    }

    #[allow(clippy::vec_box)] // As `entries`.
    fn lock(&self) -> MutexGuard<'_, Vec<Box<Kept>>> {
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
    (!with_last_used || a.usage.last_used == b.usage.last_used)
        && profile_parts(a) == profile_parts(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_types::{CandidateDecision, PlanHold, RankedProfile};

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

    fn get(memo: &PlanMemo, order: &OrderRequest, facts: &CandidateFacts) -> Option<CandidatePlan> {
        memo.get(QuestionKey::of(order, facts), order, facts)
    }

    fn keep(memo: &PlanMemo, order: OrderRequest, facts: CandidateFacts, plan: CandidatePlan) {
        memo.keep(QuestionKey::of(&order, &facts), order, facts, plan);
    }

    #[test]
    fn a_fingerprint_leaves_out_the_clock_and_last_used_and_nothing_else() {
        let facts = CandidateFacts::default();
        let key = QuestionKey::of(&order(Some(1), NOW), &facts);
        assert_eq!(QuestionKey::of(&order(Some(7), NOW + 5), &facts), key);
        assert_eq!(QuestionKey::of(&order(None, NOW), &facts), key);
        let mut cooled = order(Some(1), NOW);
        cooled.stored[0].usage.cooldown_until = Some(NOW + 50);
        assert_ne!(QuestionKey::of(&cooled, &facts), key);
        let mut counted = order(Some(1), NOW);
        (counted.stored[0].usage.failure_counts).insert(RecordedReason::RateLimit, 1);
        assert_ne!(QuestionKey::of(&counted, &facts), key);
        let mut modelled = order(Some(1), NOW);
        modelled.model = Some("gpt-x".into());
        assert_ne!(QuestionKey::of(&modelled, &facts), key);
        let fallback = CandidateFacts {
            has_fallbacks: true,
            ..CandidateFacts::default()
        };
        assert_ne!(QuestionKey::of(&order(Some(1), NOW), &fallback), key);
    }

    #[test]
    fn a_plan_is_answered_only_for_its_own_question_even_under_a_matching_key() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        let kept = order(Some(1), NOW);
        let key = QuestionKey::of(&kept, &facts);
        memo.keep(key, kept, facts.clone(), plan(NOW + 100, false));
        // A colliding fingerprint stands for another question: compared in full.
        let mut other = order(Some(1), NOW);
        other.stored[0].usage.error_count = 3;
        assert_eq!(memo.get(key, &other, &facts), None);
        assert!(memo.get(key, &order(Some(1), NOW), &facts).is_some());
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
        keep(
            &memo,
            order(Some(1), NOW),
            facts.clone(),
            plan(NOW + 100, false),
        );
        let kept = plan(NOW + 100, false);
        assert_eq!(get(&memo, &order(Some(1), NOW), &facts), Some(kept.clone()));
        // Later, and with another `last-used`: it says it does not read it.
        assert_eq!(get(&memo, &order(Some(9), NOW + 99), &facts), Some(kept));
        // At its end, before its start, with other facts, for another usage.
        assert_eq!(get(&memo, &order(Some(1), NOW + 100), &facts), None);
        assert_eq!(get(&memo, &order(Some(1), NOW - 1), &facts), None);
        let probed = CandidateFacts {
            last_probe_at: Some(NOW),
            ..CandidateFacts::default()
        };
        assert_eq!(get(&memo, &order(Some(1), NOW), &probed), None);
        let mut cooled = order(Some(1), NOW);
        cooled.stored[0].usage.cooldown_until = Some(NOW + 50);
        assert_eq!(get(&memo, &cooled, &facts), None);
    }

    #[test]
    fn a_plan_that_reads_last_used_answers_only_for_the_same_values() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        keep(
            &memo,
            order(Some(1), NOW),
            facts.clone(),
            plan(NOW + 100, true),
        );
        assert!(get(&memo, &order(Some(1), NOW + 50), &facts).is_some());
        assert_eq!(get(&memo, &order(Some(2), NOW + 50), &facts), None);
    }

    #[test]
    fn a_newer_plan_replaces_the_one_for_the_same_question_and_a_plan_for_now_only_is_not_kept() {
        let memo = PlanMemo::default();
        let facts = CandidateFacts::default();
        keep(
            &memo,
            order(Some(1), NOW),
            facts.clone(),
            plan(NOW + 100, true),
        );
        keep(
            &memo,
            order(Some(2), NOW + 10),
            facts.clone(),
            plan(NOW + 200, true),
        );
        assert_eq!(memo.lock().len(), 1);
        assert_eq!(get(&memo, &order(Some(1), NOW + 20), &facts), None);
        assert!(get(&memo, &order(Some(2), NOW + 150), &facts).is_some());
        keep(&memo, order(None, NOW), facts.clone(), plan(NOW, true));
        keep(&memo, order(None, NOW), facts.clone(), plan(0, true));
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
            keep(&memo, order(None, NOW), facts(at), plan(NOW + 100, false));
        }
        assert_eq!(memo.lock().len(), KEPT);
        assert_eq!(get(&memo, &order(None, NOW), &facts(0)), None);
        assert!(get(&memo, &order(None, NOW), &facts(KEPT)).is_some());
    }
}
