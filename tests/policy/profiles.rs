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
            let success = failover::Success {
                provider: "openai",
                model: model.as_deref(),
                now_ms: now,
            };
            let component = policy
                .record_success(&usage, &success, &no_cooldowns())
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

/// A provider with thousands of profiles (a key pool, an OAuth farm) orders
/// within the default fuel, and the same way natively: the guest's lookups
/// are indexed, not a search per profile.
#[test]
fn thousands_of_profiles_order_within_the_fuel() {
    use failover::auth::{ConfiguredProfile, CredentialKind, StoredProfile};
    const COUNT: usize = 5_000;
    let stored: Vec<StoredProfile> = (0..COUNT)
        .map(|i| StoredProfile {
            id: format!("openai:key-{i:05}"),
            provider: "openai".into(),
            kind: CredentialKind::ApiKey,
            expires: None,
            refreshable: false,
            usage: Usage {
                last_used: Some((COUNT - i) as u64),
                cooldown_until: (i % 7 == 0).then_some(2_000_000 + i as u64),
                ..Usage::default()
            },
        })
        .collect();
    let configured: Vec<ConfiguredProfile> = stored
        .iter()
        .step_by(2)
        .map(|p| ConfiguredProfile {
            id: p.id.clone(),
            provider: "openai".into(),
            mode: Some(CredentialKind::ApiKey),
        })
        .collect();
    let explicit: Vec<String> = stored.iter().rev().map(|p| p.id.clone()).collect();
    let policy = default_policy();
    for (configured, explicit_order) in [
        (Vec::new(), None),
        (configured.clone(), None),
        (configured, Some(explicit)),
    ] {
        let request = OrderRequest {
            provider: "openai".into(),
            stored: stored.clone(),
            configured,
            explicit_order,
            now_ms: 1_000_000,
            ..OrderRequest::default()
        };
        let component = policy
            .order_profiles(&request)
            .expect("order-profiles within the fuel");
        assert!(component.len() >= COUNT / 2, "{}", component.len());
        assert_eq!(component, native::order_profiles(&request));
    }
}

/// A success reads no cooldown setting in the default policy.
fn no_cooldowns() -> failover::auth::CooldownConfig {
    failover::auth::CooldownConfig {
        billing_backoff_ms: 0,
        billing_backoff_ms_by_provider: Vec::new(),
        billing_max_ms: 0,
        failure_window_ms: 0,
    }
}
