//! Generated bindings for the `failover:policy` world this host runs, and
//! which modules it admits. Nothing outside `policy` sees a generated type;
//! the conversions between them and the host's own types are in the
//! sibling `adapter` module.

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::store::StoreState;
use failover_policy::PolicyError;

/// Contract 1.0 (`wit/policy.wit`).
pub(crate) mod v1 {
    wasmtime::component::bindgen!({
        world: "policy",
        path: "../../wit",
    });

    pub(crate) use self::exports::failover::policy::{profiles, runner, types as wit};
}

/// The WIT package this host speaks, with its version.
pub const CONTRACT: &str = "failover:policy@1.0.0";

/// Prefix of every interface name in the contract.
pub(crate) const CONTRACT_PACKAGE: &str = "failover:policy";

/// The contract's semantic version.
pub(crate) const CONTRACT_VERSION: &str = "1.0.0";

/// What error messages say this host runs: every 1.y module with y <= 0.
pub(crate) const CONTRACTS_RUN: &str = "failover:policy@1.0.0";

/// Which contract a module was built for: a version of the 1.x line no
/// newer than this host's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContractVersion {
    /// The `y` of `1.y.z`.
    pub minor: u32,
    /// The `z` of `1.y.z`.
    pub patch: u32,
}

impl ContractVersion {
    /// The version this host's contract is.
    pub(crate) const CURRENT: ContractVersion = ContractVersion { minor: 0, patch: 0 };

    /// The version a module's export names carry, if this host runs it:
    /// major 1, minor at most this host's (semver: a 1.x host runs 1.y
    /// modules with y <= x).
    // The rule reads `minor <= CURRENT.minor` on every 1.x host; on 1.0 the
    // bound is 0, which clippy sees as a comparison that cannot be false.
    #[allow(clippy::absurd_extreme_comparisons)]
    pub(crate) fn from_export_version(version: &str) -> Option<Self> {
        let mut parts = version.split('.');
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        let patch: u32 = parts.next()?.parse().ok()?;
        let runs = parts.next().is_none() && major == 1 && minor <= Self::CURRENT.minor;
        runs.then_some(ContractVersion { minor, patch })
    }

    /// `failover:policy@<version>`.
    pub fn contract(self) -> String {
        format!("{CONTRACT_PACKAGE}@1.{}.{}", self.minor, self.patch)
    }
}

/// A module's exports, resolved once.
pub(crate) struct GuestPre(v1::PolicyPre<StoreState>);

impl GuestPre {
    pub(crate) fn new(pre: InstancePre<StoreState>) -> Result<Self, PolicyError> {
        v1::PolicyPre::new(pre)
            .map(GuestPre)
            .map_err(|e| PolicyError::MissingExport(format!("{e:#}")))
    }

    pub(crate) fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Guest> {
        self.0.instantiate(store)
    }
}

/// An instance of a module.
pub(crate) type Guest = v1::Policy;
