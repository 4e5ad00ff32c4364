//! The gate's checks of what contracts 0.6.0 and 0.7.0 add, on sample
//! inputs: `plan-candidate` answers as `order-profiles` then
//! `decide-candidate` do, the answers the contract fixes (which the host
//! then gives without a call) are the module's too, and a plan holds where
//! its `holds` says (where the host answers from it without a call). Samples, not proofs: a module
//! that keeps to them on these inputs and not on others is wrong in a way
//! the gate cannot see, as with any corpus.

use policy_types::{
    CandidateFacts, CredentialKind, ModelHealth, OrderRequest, RecordedReason, SelectionRequest,
    StoredProfile, Usage,
};

use super::conformance;
use super::error::PolicyError;
use super::module::Policy;

/// The name of the gate's `plan-candidate` case.
pub const PLAN_CASE: &str =
    "plan-candidate: the corpus's orders and blocked ones, with sample facts, \
     each as order-profiles then decide-candidate answered it";

/// Whether `plan-candidate` answers as `order-profiles` then
/// `decide-candidate` do, on the corpus's orders and on orders whose every
/// profile is blocked (for each kind of block), with sample facts.
pub(super) fn plans_agree(policy: &Policy) -> Result<(), PolicyError> {
    for (index, order) in sample_orders().iter().enumerate() {
        for facts in &sample_facts() {
            let one = policy.ask_plan_candidate(order.clone(), facts)?;
            let two = super::plan::plan_by_two_calls(policy, order, facts)?;
            if (&one.ranked, &one.decision) != (&two.ranked, &two.decision) {
                return Err(PolicyError::InvalidOutput {
                    call: "plan-candidate",
                    problem: format!(
                        "on order {index} with {facts:?} it answered {one:?}, not {two:?}"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The name of the gate's case for where plans hold (0.7.0).
pub const HOLD_CASE: &str =
    "plan-candidate holds: each sample plan asked again at the last time it claims to hold, \
     halfway there, and with other last-used values where it claims not to read them";

/// Whether each sample plan gives the same `ranked` and `decision` when
/// asked again where its `holds` says it holds: halfway to `until` and
/// just before it, and — when it says it does not read them — with the
/// stored profiles' `last-used` values changed.
pub(super) fn plans_hold(policy: &Policy) -> Result<(), PolicyError> {
    for (index, order) in sample_orders().iter().enumerate() {
        for facts in &sample_facts() {
            let plan = policy.ask_plan_candidate(order.clone(), facts)?;
            let holds = plan.holds;
            let mut again = Vec::new();
            if holds.until > order.now_ms {
                let span = holds.until - order.now_ms;
                for now_ms in [order.now_ms + span / 2, holds.until - 1] {
                    again.push(OrderRequest {
                        now_ms,
                        ..order.clone()
                    });
                }
            }
            if !holds.reads_last_used {
                again.push(with_other_last_used(order));
            }
            for asked in again {
                let answer = policy.ask_plan_candidate(asked.clone(), facts)?;
                if (&answer.ranked, &answer.decision) != (&plan.ranked, &plan.decision) {
                    return Err(PolicyError::InvalidOutput {
                        call: "plan-candidate",
                        problem: format!(
                            "on order {index} with {facts:?} it answered {plan:?}, \
                             but at {} with last-used {:?} {answer:?}",
                            asked.now_ms,
                            asked
                                .stored
                                .iter()
                                .map(|p| p.usage.last_used)
                                .collect::<Vec<_>>()
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

/// `order` with its stored profiles' `last-used` reversed in rank: the
/// first used most recently, the last never.
fn with_other_last_used(order: &OrderRequest) -> OrderRequest {
    let mut other = order.clone();
    let count = other.stored.len() as u64;
    for (rank, profile) in other.stored.iter_mut().enumerate() {
        let rank = rank as u64;
        profile.usage.last_used =
            (rank + 1 < count).then(|| order.now_ms.saturating_sub(1_000 * (rank + 1)));
    }
    other
}

/// The corpus's orders and orders whose every profile is blocked.
fn sample_orders() -> Vec<OrderRequest> {
    let mut orders = conformance::order_inputs();
    orders.extend(blocked_orders());
    orders
}

/// Facts of a primary, a fallback and a sibling, probed or not.
fn sample_facts() -> [CandidateFacts; 4] {
    [
        CandidateFacts::default(),
        CandidateFacts {
            primary: true,
            has_fallbacks: true,
            ..CandidateFacts::default()
        },
        CandidateFacts {
            primary: true,
            transient_probe_used: true,
            ..CandidateFacts::default()
        },
        CandidateFacts {
            sibling: true,
            last_probe_at: Some(SAMPLE_NOW - 10_000),
            has_fallbacks: true,
            ..CandidateFacts::default()
        },
    ]
}

/// The clock of the blocked orders: 2026-01-01 00:00 UTC.
const SAMPLE_NOW: u64 = 1_767_225_600_000;

/// Orders of one profile, blocked for each kind of reason: cooled down
/// (rate limit, overload) or disabled (billing, a permanent auth failure),
/// a minute or an hour ahead.
fn blocked_orders() -> Vec<OrderRequest> {
    let blocked = |usage: Usage| OrderRequest {
        provider: "openai".into(),
        stored: vec![StoredProfile {
            id: "openai:a".into(),
            provider: "openai".into(),
            kind: CredentialKind::ApiKey,
            expires: None,
            refreshable: false,
            usage,
        }],
        model: Some("openai/gpt-4o".into()),
        now_ms: SAMPLE_NOW,
        ..OrderRequest::default()
    };
    let mut orders = Vec::new();
    for ahead in [60_000, 3_600_000] {
        for reason in [RecordedReason::RateLimit, RecordedReason::Overloaded] {
            orders.push(blocked(Usage {
                cooldown_until: Some(SAMPLE_NOW + ahead),
                cooldown_reason: Some(reason),
                error_count: 1,
                ..Usage::default()
            }));
        }
        for reason in [RecordedReason::Billing, RecordedReason::AuthPermanent] {
            orders.push(blocked(Usage {
                disabled_until: Some(SAMPLE_NOW + ahead),
                disabled_reason: Some(reason),
                error_count: 1,
                ..Usage::default()
            }));
        }
    }
    orders
}

/// The name of the gate's case for the answers contract 0.6.0 fixes.
pub const FIXED_CASE: &str = "fixed answers: a model with no kept health is open and stays so; \
     a success with nothing to clear only sets last-used; a selection without an override is untimed";

/// Times the fixed answers are sampled at, apart in year and time of day:
/// the epoch, 2026-01-01 13:30 UTC and 2100-01-01 06:00 UTC.
const SAMPLE_TIMES: [u64; 3] = [0, 1_767_274_200_000, 4_102_466_400_000];

/// Whether the module gives the answers contract 0.6.0 fixes, on sample
/// inputs: `model-gate` on an all-default health is open and keeps it,
/// `record-attempt-end` after an answer keeps it, `record-success` with
/// nothing to clear only sets `last-used`, and `resolve-selection` without
/// a session override answers the same at every time.
pub(super) fn fixed_answers_hold(policy: &Policy) -> Result<(), PolicyError> {
    let idle = ModelHealth::default();
    let refuse = |call: &'static str, problem: String| PolicyError::InvalidOutput { call, problem };
    for now in SAMPLE_TIMES {
        for others_remain in [false, true] {
            let decision = policy.ask_model_gate(&idle, others_remain, now)?;
            if decision != super::runner::IDLE_GATE {
                return Err(refuse(
                    "model-gate",
                    format!("with no kept health at {now} it answered {decision:?}, not open"),
                ));
            }
        }
        let after = policy.ask_record_attempt_end(&idle, false, now)?;
        if after != idle {
            return Err(refuse(
                "record-attempt-end",
                format!("an answer at {now} from a model with no kept health gave it {after:?}"),
            ));
        }
    }
    let clean = [
        Usage::default(),
        Usage {
            last_used: Some(1_700_000_000_000),
            last_failure_at: Some(1_600_000_000_000),
            ..Usage::default()
        },
    ];
    let samples = (clean.iter())
        .flat_map(|u| SAMPLE_TIMES.map(|now| (u, now)))
        // A use or failure after `now` would be refused for itself.
        .filter(|(u, now)| {
            u.last_used
                .max(u.last_failure_at)
                .is_none_or(|at| at <= *now)
        });
    for (usage, now) in samples {
        let expected = super::profiles::idle_success(usage, now);
        for model in [None, Some("openai/gpt-4o")] {
            let after = policy.ask_record_success(usage, model, now)?;
            if after != expected {
                return Err(refuse(
                    "record-success",
                    format!("a success at {now} on {usage:?}, with nothing to clear, gave {after:?}, not {expected:?}"),
                ));
            }
        }
    }
    for request in sample_selections() {
        let answers = SAMPLE_TIMES
            .iter()
            .map(|&now_ms| {
                policy.ask_resolve_selection(&SelectionRequest {
                    now_ms,
                    ..request.clone()
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if answers.windows(2).any(|pair| pair[0] != pair[1]) {
            return Err(refuse(
                "resolve-selection",
                format!("without a session override its answer changed with now-ms: {answers:?}"),
            ));
        }
    }
    Ok(())
}

/// Selection requests without a session override, one per kind of run.
fn sample_selections() -> Vec<SelectionRequest> {
    let model = |m: &str| Some(m.to_owned());
    let configured = SelectionRequest {
        configured_primary: model("openai/gpt-4o"),
        primary_probe_interval_ms: 300_000,
        ..SelectionRequest::default()
    };
    vec![
        configured.clone(),
        SelectionRequest {
            agent_primary: model("anthropic/claude-sonnet-4"),
            ..configured.clone()
        },
        SelectionRequest {
            cron_model: model("google/gemini-2.5-flash"),
            ..configured.clone()
        },
        SelectionRequest {
            heartbeat: true,
            heartbeat_model: model("openai/gpt-4o-mini"),
            ..configured
        },
    ]
}
