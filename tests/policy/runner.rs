//! The runner-policy corpus (`tests/cases/runner.jsonl`): one case per
//! bullet of spec §3, §7, §8 and §10 — selections, chains, per-candidate
//! decisions, steps after a failure, summaries — each run natively and
//! through the component, both of which must give the expected answer.

use failover::runner::{
    CandidateDecision, CandidateRequest, ChainRequest, FailedAttempt, FallbackChain, GateDecision,
    ModelHealth, RotationConfig, RunStep, RunSummary, Selection, SelectionRequest, SummaryRequest,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::support::{check_corpus, compare, default_policy};
use crate::native::runner as native;

const FILE: &str = "runner.jsonl";

fn field<T: DeserializeOwned>(case: &Value, name: &str, line: usize) -> T {
    super::support::field(FILE, case, name, line)
}

fn run(case: &Value, line: usize) -> Option<String> {
    let policy = default_policy();
    let name = case["name"].as_str().unwrap_or("?");
    match case["kind"].as_str() {
        Some("selection") => {
            let request: SelectionRequest = field(case, "request", line);
            let component = policy
                .resolve_selection(&request)
                .expect("resolve-selection");
            let expected: Selection = field(case, "expect", line);
            compare(
                line,
                name,
                native::resolve_selection(&request),
                component,
                expected,
            )
        }
        Some("chain") => {
            let request: ChainRequest = field(case, "request", line);
            let component = policy.candidate_chain(&request).expect("candidate-chain");
            let expected: FallbackChain = field(case, "expect", line);
            compare(
                line,
                name,
                native::candidate_chain(&request),
                component,
                expected,
            )
        }
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
        Some("gate") => {
            let health: ModelHealth = field(case, "health", line);
            let others: bool = field(case, "othersRemain", line);
            let now: u64 = field(case, "nowMs", line);
            let component = policy.model_gate(&health, others, now).expect("model-gate");
            let expected: GateDecision = field(case, "expect", line);
            compare(
                line,
                name,
                native::model_gate(&health, others, now),
                component,
                expected,
            )
        }
        Some("attempt_end") => {
            let health: ModelHealth = field(case, "health", line);
            let hung: bool = field(case, "hung", line);
            let now: u64 = field(case, "nowMs", line);
            let component = policy
                .record_attempt_end(&health, hung, now)
                .expect("record-attempt-end");
            let expected: ModelHealth = field(case, "expect", line);
            compare(
                line,
                name,
                native::record_attempt_end(&health, hung, now),
                component,
                expected,
            )
        }
        Some("summary") => {
            let request: SummaryRequest = field(case, "request", line);
            let component = policy.summarise(&request).expect("summarise");
            let expected: RunSummary = field(case, "expect", line);
            compare(line, name, native::summarise(&request), component, expected)
        }
        other => panic!("{FILE} line {line}: unknown kind {other:?}"),
    }
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
