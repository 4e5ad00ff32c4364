//! Runs the policy core natively on the same flattened input the component
//! gets. Shared by the integration tests and the benchmark (`#[path]`).

use failover::report::FlatReport;

/// The core's own input type for a flattened report.
pub fn to_core(report: &FlatReport) -> policy_guest::ErrorReport {
    policy_guest::ErrorReport {
        provider: report.provider.clone(),
        now_ms: report.now_ms,
        levels: report
            .levels
            .iter()
            .map(|level| policy_guest::ErrorLevel {
                depth: level.depth,
                status: level.status,
                code: level.code.clone(),
                message: level.message.clone(),
                headers: level.headers.clone(),
            })
            .collect(),
    }
}
