//! The WIT export glue: moves values between the generated bindings and the
//! core's own types. No policy logic lives here.

use crate::model::{self, Detail, Reason};

wit_bindgen::generate!({
    world: "policy",
    path: "../wit",
});

use exports::failover::policy::types::{
    Classification, ErrorReport, FailureDetail, FailureReason, PolicyInfo,
};

/// The component's implementation of every exported interface.
struct Policy;

impl exports::failover::policy::classifier::Guest for Policy {
    fn classify(report: ErrorReport) -> Classification {
        let core = model::ErrorReport {
            provider: report.provider,
            now_ms: report.now_ms,
            levels: report
                .levels
                .into_iter()
                .map(|level| model::ErrorLevel {
                    depth: level.depth,
                    status: level.status,
                    code: level.code,
                    message: level.message,
                    headers: level.headers,
                })
                .collect(),
        };
        let verdict = crate::classify(&core);
        Classification {
            reason: verdict.reason.map(reason_to_wit),
            failover: verdict.failover,
            detail: verdict.detail.map(detail_to_wit),
            retry_after_ms: verdict.retry_after_ms,
        }
    }
}

impl exports::failover::policy::meta::Guest for Policy {
    fn describe() -> PolicyInfo {
        PolicyInfo {
            name: crate::POLICY_NAME.into(),
            version: crate::POLICY_VERSION.into(),
            contract: crate::CONTRACT.into(),
        }
    }
}

fn reason_to_wit(reason: Reason) -> FailureReason {
    match reason {
        Reason::RateLimit => FailureReason::RateLimit,
        Reason::Overloaded => FailureReason::Overloaded,
        Reason::Billing => FailureReason::Billing,
        Reason::Auth => FailureReason::Auth,
        Reason::AuthPermanent => FailureReason::AuthPermanent,
        Reason::Timeout => FailureReason::Timeout,
        Reason::Format => FailureReason::Format,
        Reason::ModelNotFound => FailureReason::ModelNotFound,
        Reason::SessionExpired => FailureReason::SessionExpired,
        Reason::ContextOverflow => FailureReason::ContextOverflow,
    }
}

fn detail_to_wit(detail: Detail) -> FailureDetail {
    match detail {
        Detail::EmptyResponse => FailureDetail::EmptyResponse,
        Detail::NoErrorDetails => FailureDetail::NoErrorDetails,
        Detail::Unclassified => FailureDetail::Unclassified,
    }
}

mod profiles;
mod runner;

export!(Policy);
