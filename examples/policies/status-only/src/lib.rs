//! Names a failure by its HTTP status alone; every other decision is the
//! default policy's.

use failover_policy_sdk::types::{Classification, ErrorReport, FailureDetail, FailureReason};
use failover_policy_sdk::Policy;

struct StatusOnly;

impl Policy for StatusOnly {
    const NAME: &'static str = "status-only";
    const VERSION: &'static str = "0.1.0";

    fn classify(report: ErrorReport) -> Classification {
        let reason = match report.levels.iter().find_map(|level| level.status) {
            Some(429) => FailureReason::RateLimit,
            Some(503 | 529) => FailureReason::Overloaded,
            Some(402) => FailureReason::Billing,
            Some(401) => FailureReason::Auth,
            Some(403) => FailureReason::AuthPermanent,
            Some(408 | 504) => FailureReason::Timeout,
            Some(404) => FailureReason::ModelNotFound,
            Some(400 | 413 | 422) => FailureReason::Format,
            Some(500..=599) => FailureReason::ServerError,
            _ => FailureReason::Unknown,
        };
        let unknown = reason == FailureReason::Unknown;
        Classification {
            reason,
            detail: unknown.then_some(FailureDetail::Unclassified),
            retry_after_ms: None,
            reset_at_ms: None,
        }
    }
}

failover_policy_sdk::export!(StatusOnly);
