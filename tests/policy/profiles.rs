//! The profile-policy corpus (`tests/cases/profiles.jsonl`): one case per
//! bullet of spec §4 and §6 — orders, session pins, failures and successes —
//! each run natively and through the component, both of which must give the
//! expected answer.

use failover::auth::{
    CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::support::default_policy;
use crate::native::profiles as native;

fn field<T: DeserializeOwned>(case: &Value, name: &str, line: usize) -> T {
    serde_json::from_value(case[name].clone())
        .unwrap_or_else(|e| panic!("profiles.jsonl line {line}: field {name}: {e}"))
}

/// Runs one case; returns a failure description, if any.
fn run(case: &Value, line: usize) -> Option<String> {
    let policy = default_policy();
    let name = case["name"].as_str().unwrap_or("?");
    let compare = |native: String, component: String, expected: String| {
        if native != component {
            Some(format!(
                "line {line} {name:?}: native {native} != component {component}"
            ))
        } else if component != expected {
            Some(format!(
                "line {line} {name:?}:\n    expected {expected}\n    got      {component}"
            ))
        } else {
            None
        }
    };
    match case["kind"].as_str() {
        Some("order") => {
            let request: OrderRequest = field(case, "request", line);
            let expected: Vec<RankedProfile> = field(case, "expect", line);
            let component = policy.order_profiles(&request).expect("order-profiles");
            compare(
                format!("{:?}", native::order_profiles(&request)),
                format!("{component:?}"),
                format!("{expected:?}"),
            )
        }
        Some("pin") => {
            let request: PinRequest = field(case, "request", line);
            let expected: PinDecision = field(case, "expect", line);
            let component = policy.pin_profile(&request).expect("pin-profile");
            compare(
                format!("{:?}", native::pin_profile(&request)),
                format!("{component:?}"),
                format!("{expected:?}"),
            )
        }
        Some("failure") => {
            let usage: Usage = field(case, "usage", line);
            let event: FailureEvent = field(case, "event", line);
            let config: CooldownConfig = field(case, "config", line);
            let expected: Usage = field(case, "expect", line);
            let component = policy
                .record_failure(&usage, &event, &config)
                .expect("record-failure");
            compare(
                format!("{:?}", native::record_failure(&usage, &event, &config)),
                format!("{component:?}"),
                format!("{expected:?}"),
            )
        }
        Some("success") => {
            let usage: Usage = field(case, "usage", line);
            let model: Option<String> = field(case, "model", line);
            let now: u64 = field(case, "nowMs", line);
            let expected: Usage = field(case, "expect", line);
            let component = policy
                .record_success(&usage, model.as_deref(), now)
                .expect("record-success");
            compare(
                format!(
                    "{:?}",
                    native::record_success(&usage, model.as_deref(), now)
                ),
                format!("{component:?}"),
                format!("{expected:?}"),
            )
        }
        other => panic!("profiles.jsonl line {line}: unknown kind {other:?}"),
    }
}

#[test]
fn every_profile_case_decides_as_expected_natively_and_in_the_component() {
    let text = include_str!("../cases/profiles.jsonl");
    let mut failures = Vec::new();
    let mut kinds = std::collections::BTreeMap::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line).expect("case line");
        *kinds
            .entry(case["kind"].as_str().unwrap_or("?").to_owned())
            .or_insert(0) += 1;
        failures.extend(run(&case, index + 1));
    }
    for kind in ["order", "pin", "failure", "success"] {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) >= 4,
            "too few {kind} cases: {kinds:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
