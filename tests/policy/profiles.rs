//! The profile-policy corpus (`tests/cases/profiles.jsonl`): one case per
//! bullet of spec §4 and §6 — orders, session pins, failures and successes —
//! each run natively and through the component, both of which must give the
//! expected answer.

use failover::auth::{
    CooldownConfig, FailureEvent, OrderRequest, PinDecision, PinRequest, RankedProfile, Usage,
};
use serde_json::Value;

use super::support::{check_corpus, compare, default_policy};
use crate::native::profiles as native;

const FILE: &str = "profiles.jsonl";

fn get<T: serde::de::DeserializeOwned>(case: &Value, name: &str, line: usize) -> T {
    super::support::field(FILE, case, name, line)
}

fn run(case: &Value, line: usize) -> Option<String> {
    let policy = default_policy();
    let name = case["name"].as_str().unwrap_or("?");
    match case["kind"].as_str() {
        Some("order") => {
            let request: OrderRequest = get(case, "request", line);
            let expected: Vec<RankedProfile> = get(case, "expect", line);
            let component = policy.order_profiles(&request).expect("order-profiles");
            compare(
                line,
                name,
                native::order_profiles(&request),
                component,
                expected,
            )
        }
        Some("pin") => {
            let request: PinRequest = get(case, "request", line);
            let expected: PinDecision = get(case, "expect", line);
            let component = policy.pin_profile(&request).expect("pin-profile");
            compare(
                line,
                name,
                native::pin_profile(&request),
                component,
                expected,
            )
        }
        Some("failure") => {
            let usage: Usage = get(case, "usage", line);
            let event: FailureEvent = get(case, "event", line);
            let config: CooldownConfig = get(case, "config", line);
            let expected: Usage = get(case, "expect", line);
            let component = policy
                .record_failure(&usage, &event, &config)
                .expect("record-failure");
            compare(
                line,
                name,
                native::record_failure(&usage, &event, &config),
                component,
                expected,
            )
        }
        Some("success") => {
            let usage: Usage = get(case, "usage", line);
            let model: Option<String> = get(case, "model", line);
            let now: u64 = get(case, "nowMs", line);
            let expected: Usage = get(case, "expect", line);
            let component = policy
                .record_success(&usage, model.as_deref(), now)
                .expect("record-success");
            compare(
                line,
                name,
                native::record_success(&usage, model.as_deref(), now),
                component,
                expected,
            )
        }
        other => panic!("{FILE} line {line}: unknown kind {other:?}"),
    }
}

#[test]
fn every_profile_case_decides_as_expected_natively_and_in_the_component() {
    check_corpus(
        FILE,
        include_str!("../cases/profiles.jsonl"),
        &["order", "pin", "failure", "success"],
        4,
        run,
    );
}
