//! The classification corpus (`tests/cases/classify.jsonl`): every case runs
//! natively and through the component, and both must give the expected
//! verdict.

use failover::report::flatten;
use failover::{Classification, Limits, ProviderError};
use serde_json::Value;

use super::support::{classify_native, default_policy, detail_named, reason_named};

/// The clock cases run at unless they name their own: 2023-11-14.
const DEFAULT_NOW_MS: u64 = 1_700_000_000_000;

/// Reasons that advance the fallback chain (spec F-7.4, F-7.5, F-7.5a).
const ADVANCING: &[&str] = &[
    "rate_limit",
    "overloaded",
    "billing",
    "auth",
    "auth_permanent",
    "timeout",
    "model_not_found",
];

struct Case {
    line: usize,
    name: String,
    input: ProviderError,
    now_ms: u64,
    expected: Classification,
}

fn load_cases() -> Vec<Case> {
    let text = include_str!("../cases/classify.jsonl");
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("classify.jsonl line {}: {e}", index + 1));
            let expect = &value["expect"];
            let reason = expect["reason"].as_str();
            Case {
                line: index + 1,
                name: value["name"]
                    .as_str()
                    .expect("every case has a name")
                    .to_owned(),
                input: ProviderError::from_json(&value["input"])
                    .unwrap_or_else(|e| panic!("classify.jsonl line {}: {e}", index + 1)),
                now_ms: value["now"].as_u64().unwrap_or(DEFAULT_NOW_MS),
                expected: Classification {
                    reason: reason.map(reason_named),
                    failover: reason.is_some_and(|r| ADVANCING.contains(&r)),
                    detail: expect["detail"].as_str().map(detail_named),
                    retry_after_ms: expect["retryAfterMs"].as_u64(),
                },
            }
        })
        .collect()
}

#[test]
fn corpus_is_large_and_names_are_unique() {
    let cases = load_cases();
    assert!(cases.len() >= 150, "only {} cases", cases.len());
    let mut names = std::collections::HashSet::new();
    for case in &cases {
        assert!(
            names.insert(case.name.as_str()),
            "duplicate case name {:?}",
            case.name
        );
    }
}

#[test]
fn every_case_classifies_as_expected_natively_and_in_the_component() {
    let policy = default_policy();
    let mut failures = Vec::new();
    let cases = load_cases();
    for case in &cases {
        let report = flatten(&case.input, case.now_ms, &Limits::default());
        let native = classify_native(&report);
        let component = policy
            .classify_report(report.clone())
            .unwrap_or_else(|e| panic!("case {:?}: {e}", case.name));
        if native != component {
            failures.push(format!(
                "line {} {:?}: native {native:?} != component {component:?}",
                case.line, case.name
            ));
        } else if component != case.expected {
            failures.push(format!(
                "line {} {:?}:\n    expected {:?}\n    got      {component:?}",
                case.line, case.name, case.expected
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
