//! Shared fixtures: the default policy, compiled once per test binary.

use std::sync::OnceLock;

use failover::report::FlatReport;
use failover::{Classification, Detail, Policy, PolicyEngine, Reason};

/// The engine every test shares.
pub fn engine() -> &'static PolicyEngine {
    static ENGINE: OnceLock<PolicyEngine> = OnceLock::new();
    ENGINE.get_or_init(|| PolicyEngine::new().expect("engine"))
}

/// The embedded default policy, loaded once.
pub fn default_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| Policy::default_policy(engine()).expect("the default policy loads"))
}

/// Runs the policy core natively on the same flattened input the component gets.
pub fn classify_native(report: &FlatReport) -> Classification {
    let verdict = policy_guest::classify(&crate::native::to_core(report));
    Classification {
        reason: verdict.reason.map(|r| reason_named(r.as_str())),
        failover: verdict.failover,
        detail: verdict.detail.map(|d| detail_named(d.as_str())),
        retry_after_ms: verdict.retry_after_ms,
    }
}

/// The host reason with the spec name `name`.
pub fn reason_named(name: &str) -> Reason {
    *Reason::ALL
        .iter()
        .find(|r| r.as_str() == name)
        .unwrap_or_else(|| panic!("no reason named {name}"))
}

/// The host detail with the spec name `name`.
pub fn detail_named(name: &str) -> Detail {
    [
        Detail::EmptyResponse,
        Detail::NoErrorDetails,
        Detail::Unclassified,
    ]
    .into_iter()
    .find(|d| d.as_str() == name)
    .unwrap_or_else(|| panic!("no detail named {name}"))
}

/// Reads field `name` of a corpus case.
pub fn field<T: serde::de::DeserializeOwned>(
    file: &str,
    case: &serde_json::Value,
    name: &str,
    line: usize,
) -> T {
    serde_json::from_value(case[name].clone())
        .unwrap_or_else(|e| panic!("{file} line {line}: field {name}: {e}"))
}

/// The first mismatch among the native, component and expected answers.
pub fn compare<T: std::fmt::Debug + PartialEq>(
    line: usize,
    name: &str,
    native: T,
    component: T,
    expected: T,
) -> Option<String> {
    if native != component {
        Some(format!(
            "line {line} {name:?}: native {native:?} != component {component:?}"
        ))
    } else if component != expected {
        Some(format!(
            "line {line} {name:?}:\n    expected {expected:?}\n    got      {component:?}"
        ))
    } else {
        None
    }
}

/// Runs every case of a JSON Lines corpus through `run` (which returns a
/// mismatch, if any) and fails listing them all. Each of `kinds` must have
/// at least `min_per_kind` cases, so a corpus cannot silently shrink.
pub fn check_corpus(
    file: &str,
    text: &str,
    kinds: &[&str],
    min_per_kind: usize,
    run: impl Fn(&serde_json::Value, usize) -> Option<String>,
) {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{file} line {}: {e}", index + 1));
        *counts
            .entry(case["kind"].as_str().unwrap_or("?").to_owned())
            .or_insert(0) += 1;
        failures.extend(run(&case, index + 1));
    }
    for kind in kinds {
        assert!(
            counts.get(*kind).copied().unwrap_or(0) >= min_per_kind,
            "{file}: too few {kind} cases: {counts:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
