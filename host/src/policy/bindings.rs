//! Generated bindings for the `failover:policy` world and the conversions
//! between them and the host's own types. Nothing outside `policy` sees a
//! generated type.

use crate::classification::{Classification, Detail, Reason};
use crate::report::FlatReport;

wasmtime::component::bindgen!({
    world: "policy",
    path: "wit",
});

use self::exports::failover::policy::types as wit;

/// The WIT package this host speaks, with its version.
pub const CONTRACT: &str = "failover:policy@0.4.0";

/// Prefix of every interface name in the contract.
pub const CONTRACT_PACKAGE: &str = "failover:policy";

/// The contract's semantic version.
pub const CONTRACT_VERSION: &str = "0.4.0";

/// Moves a flattened report into the generated types (no copies).
pub(crate) fn report_to_wit(report: FlatReport) -> wit::ErrorReport {
    wit::ErrorReport {
        provider: report.provider,
        now_ms: report.now_ms,
        levels: report
            .levels
            .into_iter()
            .map(|level| wit::ErrorLevel {
                depth: level.depth,
                status: level.status,
                code: level.code,
                message: level.message,
                headers: level.headers,
            })
            .collect(),
    }
}

pub(crate) fn classification_from_wit(verdict: wit::Classification) -> Classification {
    Classification {
        reason: verdict.reason.map(reason_from_wit),
        failover: verdict.failover,
        detail: verdict.detail.map(detail_from_wit),
        retry_after_ms: verdict.retry_after_ms,
    }
}

fn reason_from_wit(reason: wit::FailureReason) -> Reason {
    use wit::FailureReason as W;
    match reason {
        W::RateLimit => Reason::RateLimit,
        W::Overloaded => Reason::Overloaded,
        W::Billing => Reason::Billing,
        W::Auth => Reason::Auth,
        W::AuthPermanent => Reason::AuthPermanent,
        W::Timeout => Reason::Timeout,
        W::Format => Reason::Format,
        W::ModelNotFound => Reason::ModelNotFound,
        W::SessionExpired => Reason::SessionExpired,
        W::ContextOverflow => Reason::ContextOverflow,
    }
}

fn detail_from_wit(detail: wit::FailureDetail) -> Detail {
    use wit::FailureDetail as W;
    match detail {
        W::EmptyResponse => Detail::EmptyResponse,
        W::NoErrorDetails => Detail::NoErrorDetails,
        W::Unclassified => Detail::Unclassified,
    }
}
