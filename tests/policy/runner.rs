//! The runner-policy corpus (`tests/cases/runner.jsonl`): one case per
//! bullet of spec §3, §7, §8, §10 and §12 — selections, chains,
//! per-candidate decisions, slow models, steps after a failure, summaries —
//! each decided by the native core and asked of the component through the
//! contract's functions (`plan-run` for a selection or a chain,
//! `decide-candidate` with the model's health for a gate,
//! `record-model-attempt` for an attempt's end); both must give the
//! expected answer.

use failover::runner::{
    AttemptEnd, CandidateDecision, CandidateRequest, FailedAttempt, ModelHealth, OverrideSource,
    RotationConfig, RunPlan, RunRequest, RunStep, RunSummary, SelectionSource, SessionOverride,
    SummaryRequest,
};
use failover::Policy;
use policy_types::{
    ChainRequest, FallbackChain, Gate, GateDecision, RankedProfile, Selection, SelectionRequest,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::support::{check_corpus, compare, default_policy};
use crate::native::runner as native;

const FILE: &str = "runner.jsonl";

fn field<T: DeserializeOwned>(case: &Value, name: &str, line: usize) -> T {
    super::support::field(FILE, case, name, line)
}

/// The run request whose plan starts as `request` selects.
fn selection_run(request: &SelectionRequest) -> RunRequest {
    RunRequest {
        configured_primary: request.configured_primary.clone(),
        agent_primary: request.agent_primary.clone(),
        cron_model: request.cron_model.clone(),
        heartbeat: request.heartbeat,
        heartbeat_model: request.heartbeat_model.clone(),
        session_override: request.session_override.clone(),
        last_primary_probe_at: request.last_primary_probe_at,
        now_ms: request.now_ms,
        primary_probe_interval_ms: request.primary_probe_interval_ms,
        ..RunRequest::default()
    }
}

/// A plan's start, as a selection says it.
fn started(plan: RunPlan) -> Selection {
    Selection {
        model: plan.candidates.first().cloned(),
        source: plan.source,
        clear_override: plan.clear_override,
        probe_primary: plan.probe_primary,
    }
}

/// The run request whose plan selects `request.requested` for
/// `request.source`, when a run can say so.
fn chain_run(request: &ChainRequest) -> Option<RunRequest> {
    let model = request.requested.clone();
    let base = RunRequest {
        configured_primary: request.configured_primary.clone(),
        configured_fallbacks: request.configured_fallbacks.clone(),
        fallbacks_override: request.fallbacks_override.clone(),
        ..RunRequest::default()
    };
    let session = |source| SessionOverride {
        model: model.clone(),
        source,
        origin: request.configured_primary.clone(),
    };
    let primary_is_requested = request
        .configured_primary
        .as_ref()
        .is_none_or(|p| *p == model);
    Some(match request.source {
        SelectionSource::ConfiguredDefault if request.fallbacks_override.is_some() => RunRequest {
            requested: Some(model),
            ..base
        },
        SelectionSource::ConfiguredDefault if primary_is_requested => RunRequest {
            configured_primary: Some(model),
            ..base
        },
        SelectionSource::ConfiguredDefault => return None,
        SelectionSource::AgentPrimary => RunRequest {
            agent_primary: Some(model),
            agent_fallbacks: request.source_fallbacks.clone(),
            ..base
        },
        SelectionSource::CronJob => RunRequest {
            cron_model: Some(model),
            cron_fallbacks: request.source_fallbacks.clone(),
            ..base
        },
        SelectionSource::Heartbeat => RunRequest {
            heartbeat: true,
            heartbeat_model: Some(model),
            ..base
        },
        SelectionSource::UserOverride if request.fallbacks_override.is_none() => RunRequest {
            requested: Some(model),
            ..base
        },
        SelectionSource::UserOverride => RunRequest {
            session_override: Some(session(Some(OverrideSource::User))),
            ..base
        },
        SelectionSource::AutoOverride => RunRequest {
            session_override: Some(session(Some(OverrideSource::Auto))),
            ..base
        },
        SelectionSource::LegacyOverride => RunRequest {
            session_override: Some(session(None)),
            ..base
        },
    })
}

/// A gate as `decide-candidate` answers it for a model with one
/// available profile.
fn gate_request(health: ModelHealth, later: bool, now_ms: u64) -> CandidateRequest {
    CandidateRequest {
        model: "openai/gpt-4o".into(),
        primary: true,
        ranked: vec![RankedProfile {
            id: "openai:a".into(),
            available: true,
            blocked_until: None,
        }],
        later_candidates: later,
        health,
        now_ms,
        ..CandidateRequest::default()
    }
}

/// What a gate means for that candidate.
fn gated(gate: Gate) -> CandidateDecision {
    let ids = vec!["openai:a".to_owned()];
    match gate {
        Gate::Open => CandidateDecision::Attempt(ids),
        Gate::Trial => CandidateDecision::Trial(ids),
        Gate::Skip => CandidateDecision::Skip(policy_types::RecordedReason::Timeout),
    }
}

fn end_of(hung: bool) -> AttemptEnd {
    if hung {
        AttemptEnd::Hung
    } else {
        AttemptEnd::Answered
    }
}

fn run(case: &Value, line: usize) -> Option<String> {
    let policy = default_policy();
    let name = case["name"].as_str().unwrap_or("?");
    match case["kind"].as_str() {
        Some("selection") => {
            let request: SelectionRequest = field(case, "request", line);
            let run = selection_run(&request);
            let component = started(policy.plan_run(&run).expect("plan-run"));
            let expected: Selection = field(case, "expect", line);
            let native = started(native::plan_run(&run));
            compare(line, name, native, component, expected)
        }
        Some("chain") => run_chain(policy, case, line, name),
        Some("decide") => {
            let request: CandidateRequest = field(case, "request", line);
            let component = policy.decide_candidate(&request).expect("decide-candidate");
            let expected: CandidateDecision = field(case, "expect", line);
            compare(
                line,
                name,
                native::decide_candidate(&request),
                component,
                expected,
            )
        }
        Some("step") => {
            let attempt: FailedAttempt = field(case, "attempt", line);
            let config: RotationConfig = field(case, "config", line);
            let component = policy.next_step(&attempt, &config).expect("next-step");
            let expected: RunStep = field(case, "expect", line);
            compare(
                line,
                name,
                native::next_step(&attempt, &config),
                component,
                expected,
            )
        }
        Some("gate") => run_gate(policy, case, line, name),
        Some("attempt_end") => run_attempt_end(policy, case, line, name),
        Some("summary") => {
            let request: SummaryRequest = field(case, "request", line);
            let component = policy.summarise(&request).expect("summarise");
            let expected: RunSummary = field(case, "expect", line);
            compare(line, name, native::summarise(&request), component, expected)
        }
        other => panic!("{FILE} line {line}: unknown kind {other:?}"),
    }
}

/// A `chain` case: the native chain against the one the component plans
/// (or against itself when no run can select it) and the expected one.
fn run_chain(policy: &Policy, case: &Value, line: usize, name: &str) -> Option<String> {
    let request: ChainRequest = field(case, "request", line);
    let expected: FallbackChain = field(case, "expect", line);
    let chain = policy_guest::runner::candidate_chain(&request);
    let Some(run) = chain_run(&request) else {
        return compare(line, name, chain.clone(), chain, expected);
    };
    let plan = policy.plan_run(&run).expect("plan-run");
    let component = FallbackChain {
        candidates: plan.candidates,
        strict: plan.strict,
    };
    compare(line, name, chain, component, expected)
}

/// A `gate` case: a model's health decided as a candidate, natively and by
/// the component, against what the expected gate means.
fn run_gate(policy: &Policy, case: &Value, line: usize, name: &str) -> Option<String> {
    let health: ModelHealth = field(case, "health", line);
    let others: bool = field(case, "othersRemain", line);
    let now: u64 = field(case, "nowMs", line);
    let request = gate_request(health, others, now);
    let component = policy.decide_candidate(&request).expect("decide-candidate");
    let expected: GateDecision = field(case, "expect", line);
    compare(
        line,
        name,
        native::decide_candidate(&request),
        component,
        gated(expected.gate),
    )
}

/// An `attempt_end` case: a model's health after an attempt's end,
/// natively and by the component, against the expected health.
fn run_attempt_end(policy: &Policy, case: &Value, line: usize, name: &str) -> Option<String> {
    let health: ModelHealth = field(case, "health", line);
    let hung: bool = field(case, "hung", line);
    let now: u64 = field(case, "nowMs", line);
    let component = policy
        .record_model_attempt(&health, end_of(hung), now)
        .expect("record-model-attempt");
    let expected: ModelHealth = field(case, "expect", line);
    compare(
        line,
        name,
        native::record_model_attempt(&health, end_of(hung), now),
        component,
        expected,
    )
}

#[test]
fn every_runner_case_decides_as_expected_natively_and_in_the_component() {
    check_corpus(
        FILE,
        include_str!("../cases/runner.jsonl"),
        &[
            "selection",
            "chain",
            "decide",
            "step",
            "gate",
            "attempt_end",
            "summary",
        ],
        5,
        run,
    );
}
