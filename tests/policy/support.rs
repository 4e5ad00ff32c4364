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
