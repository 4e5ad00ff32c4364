//! Generated bindings for the `failover:policy` world and the conversions
//! between them and the host's own types. Nothing outside `policy` sees a
//! generated type.

use policy_types::Mirror;

use crate::classification::Classification;
use crate::report::FlatReport;

wasmtime::component::bindgen!({
    world: "policy",
    path: "../../wit",
});

use self::exports::failover::policy::types as wit;

/// The WIT package this host speaks, with its version.
pub const CONTRACT: &str = "failover:policy@0.4.0";

/// Prefix of every interface name in the contract.
pub const CONTRACT_PACKAGE: &str = "failover:policy";

/// The contract's semantic version.
pub const CONTRACT_VERSION: &str = "0.4.0";

policy_types::mirror_contract!(wit);

/// Moves a flattened report into the generated types.
pub(crate) fn report_to_wit(report: FlatReport) -> wit::ErrorReport {
    report.report.mirror()
}

pub(crate) fn classification_from_wit(verdict: wit::Classification) -> Classification {
    verdict.mirror()
}
