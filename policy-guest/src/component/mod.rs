//! The WIT export glue: moves values between the generated bindings and the
//! core's own types. No policy logic lives here.
//!
//! [`DefaultPolicy`] implements every exported interface. Another guest can
//! reuse it (feature `bindings`): implement the interfaces on its own type,
//! delegate to `DefaultPolicy` for all but the rule it changes, and export
//! with `policy_guest::component::export_policy!(ItsType)`. The default component
//! (feature `component`) exports `DefaultPolicy` itself.

use crate::model::{self, Detail, Reason};

wit_bindgen::generate!({
    world: "policy",
    path: "../wit",
    // Other crates export through this crate's bindings.
    default_bindings_module: "policy_guest::component",
    pub_export_macro: true,
    export_macro_name: "export_policy",
});

use exports::failover::policy::types::{
    Classification, ErrorReport, FailureDetail, FailureReason, PolicyInfo,
};

/// The default policy's implementation of every exported interface.
pub struct DefaultPolicy;

impl exports::failover::policy::classifier::Guest for DefaultPolicy {
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

impl exports::failover::policy::meta::Guest for DefaultPolicy {
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

#[cfg(feature = "component")]
export_policy!(DefaultPolicy with_types_in self);
