//! Generated bindings for the `failover:policy` world, one set per contract
//! version this host runs, and the conversions between them and the host's
//! own types. Nothing outside `policy` sees a generated type.
//!
//! The current contract is `wit/policy.wit`; 0.7.0 (`wit/legacy/0.7.0`)
//! has the same types, its reports crossing as records (`classify-batch`
//! where 0.8.0 has `classify-packed-batch`); 0.6.0 (`wit/legacy/0.6.0`)
//! has 0.7.0's functions, its plans without `holds`; 0.5.0
//! (`wit/legacy/0.5.0`) lacks `plan-candidate`, and the calls 0.6.0 spares;
//! 0.4.0 (`wit/legacy/0.4.0`) also lacks `classify-batch`. A module built
//! for any of them runs: a [`Guest`] is an instance of one, and
//! [`on_guest!`] makes a call the same way on each, converting its
//! arguments and answer through [`Mirror`](policy_types::Mirror).

use wasmtime::component::InstancePre;
use wasmtime::Store;

use super::error::PolicyError;
use super::pool::StoreState;

/// What a module's `describe` says, in the host's type.
pub(crate) struct Described {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) contract: String,
}

/// One contract version's generated bindings (from the WIT at `$path`),
/// with the conversions between them and the host's types; the generated
/// types module is `wit`. `before 0.7.0` or `before 0.6.0` marks an earlier contract's (see
/// `policy_types::mirror_contract!`).
macro_rules! contract_bindings {
    ($path:literal $(, $($before:tt)+)?) => {
        wasmtime::component::bindgen!({
            world: "policy",
            path: $path,
        });

        use self::exports::failover::policy::types as wit;
        policy_types::mirror_contract!(wit $(, $($before)+)?);

        impl policy_types::Mirror<super::Described> for wit::PolicyInfo {
            fn mirror(self) -> super::Described {
                super::Described {
                    name: self.name,
                    version: self.version,
                    contract: self.contract,
                }
            }
        }
    };
}

/// The current contract: `wit/policy.wit`.
pub(crate) mod current {
    contract_bindings!("../../wit");

    pub(crate) use wit::OrderRequest;
}

/// Contract 0.7.0, frozen: modules whose reports cross as records.
pub(crate) mod v0_7 {
    contract_bindings!("../../wit/legacy/0.7.0");
}

/// Contract 0.6.0, frozen: modules whose plans do not say where they hold.
pub(crate) mod v0_6 {
    contract_bindings!("../../wit/legacy/0.6.0", before 0.7.0);
}

/// Contract 0.5.0, frozen: modules built before 0.6.0 spared calls.
pub(crate) mod v0_5 {
    contract_bindings!("../../wit/legacy/0.5.0", before 0.6.0);
}

/// Contract 0.4.0, frozen: modules built before `classify-batch`.
pub(crate) mod v0_4 {
    contract_bindings!("../../wit/legacy/0.4.0", before 0.6.0);
}

/// The WIT package this host speaks, with its version.
pub const CONTRACT: &str = "failover:policy@0.8.0";

/// Prefix of every interface name in the contract.
pub const CONTRACT_PACKAGE: &str = "failover:policy";

/// The contract's semantic version.
pub const CONTRACT_VERSION: &str = "0.8.0";

/// What error messages say this host runs.
pub(crate) const CONTRACTS_RUN: &str = "failover:policy@0.8.0 (or 0.7.0, 0.6.0, 0.5.0, 0.4.0)";

/// Which contract a module was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContractVersion {
    /// The current contract ([`CONTRACT`]).
    Current,
    /// 0.7.0: reports cross as records, one allocation call per string
    /// and list, and a batch goes to `classify-batch`.
    V0_7,
    /// 0.6.0: a plan does not say where else it holds, so the host keeps
    /// none.
    V0_6,
    /// 0.5.0: no `plan-candidate` (the host asks `order-profiles` then
    /// `decide-candidate`), and every `model-gate`, `record-attempt-end`,
    /// `record-success` and `resolve-selection` call is made (0.6.0 fixes
    /// some of their answers).
    V0_5,
    /// 0.4.0: also without `classify-batch`, which the host then does
    /// with one `classify` call per report.
    V0_4,
}

impl ContractVersion {
    /// The version a module's export names carry, if this host runs it.
    pub(crate) fn from_export_version(version: &str) -> Option<Self> {
        match version {
            CONTRACT_VERSION => Some(ContractVersion::Current),
            "0.7.0" => Some(ContractVersion::V0_7),
            "0.6.0" => Some(ContractVersion::V0_6),
            "0.5.0" => Some(ContractVersion::V0_5),
            "0.4.0" => Some(ContractVersion::V0_4),
            _ => None,
        }
    }

    /// `failover:policy@<version>`: what the module's `describe` must say.
    pub fn contract(self) -> &'static str {
        match self {
            ContractVersion::Current => CONTRACT,
            ContractVersion::V0_7 => "failover:policy@0.7.0",
            ContractVersion::V0_6 => "failover:policy@0.6.0",
            ContractVersion::V0_5 => "failover:policy@0.5.0",
            ContractVersion::V0_4 => "failover:policy@0.4.0",
        }
    }

    /// The module exports `classify-batch` (0.5.0 on).
    pub fn has_batch(self) -> bool {
        self != ContractVersion::V0_4
    }

    /// `order-profiles` is sent only the profiles an answer can depend on
    /// (0.5.0 on); a 0.4.0 module gets every profile.
    pub fn narrows_profiles(self) -> bool {
        self != ContractVersion::V0_4
    }

    /// The module exports `classify-packed` and `classify-packed-batch`
    /// (0.8.0 on), which the host then calls instead of `classify` and
    /// `classify-batch`.
    pub fn packs_reports(self) -> bool {
        self == ContractVersion::Current
    }

    /// The module exports `plan-candidate` (0.6.0 on).
    pub fn plans_candidates(self) -> bool {
        matches!(
            self,
            ContractVersion::Current | ContractVersion::V0_7 | ContractVersion::V0_6
        )
    }

    /// The module's plans say where else they hold (0.7.0 on), so the host
    /// keeps them.
    pub fn plans_hold(self) -> bool {
        matches!(self, ContractVersion::Current | ContractVersion::V0_7)
    }

    /// The contract fixes the answers the host then gives without a call
    /// (0.6.0 on): `model-gate` and `record-attempt-end` on a model with
    /// no kept health, `record-success` on a profile with nothing to clear,
    /// `resolve-selection` without a session override.
    pub fn fixes_idle_answers(self) -> bool {
        matches!(
            self,
            ContractVersion::Current | ContractVersion::V0_7 | ContractVersion::V0_6
        )
    }
}

/// A module's exports, resolved once, for the contract it was built for.
pub(crate) enum GuestPre {
    Current(current::PolicyPre<StoreState>),
    V0_7(v0_7::PolicyPre<StoreState>),
    V0_6(v0_6::PolicyPre<StoreState>),
    V0_5(v0_5::PolicyPre<StoreState>),
    V0_4(v0_4::PolicyPre<StoreState>),
}

impl GuestPre {
    pub(crate) fn new(
        version: ContractVersion,
        pre: InstancePre<StoreState>,
    ) -> Result<Self, PolicyError> {
        let missing = |e: wasmtime::Error| PolicyError::MissingExport(format!("{e:#}"));
        Ok(match version {
            ContractVersion::Current => {
                GuestPre::Current(current::PolicyPre::new(pre).map_err(missing)?)
            }
            ContractVersion::V0_7 => GuestPre::V0_7(v0_7::PolicyPre::new(pre).map_err(missing)?),
            ContractVersion::V0_6 => GuestPre::V0_6(v0_6::PolicyPre::new(pre).map_err(missing)?),
            ContractVersion::V0_5 => GuestPre::V0_5(v0_5::PolicyPre::new(pre).map_err(missing)?),
            ContractVersion::V0_4 => GuestPre::V0_4(v0_4::PolicyPre::new(pre).map_err(missing)?),
        })
    }

    pub(crate) fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Guest> {
        Ok(match self {
            GuestPre::Current(pre) => Guest::Current(pre.instantiate(store)?),
            GuestPre::V0_7(pre) => Guest::V0_7(pre.instantiate(store)?),
            GuestPre::V0_6(pre) => Guest::V0_6(pre.instantiate(store)?),
            GuestPre::V0_5(pre) => Guest::V0_5(pre.instantiate(store)?),
            GuestPre::V0_4(pre) => Guest::V0_4(pre.instantiate(store)?),
        })
    }
}

/// An instance of a module, of the contract it was built for.
pub(crate) enum Guest {
    Current(current::Policy),
    V0_7(v0_7::Policy),
    V0_6(v0_6::Policy),
    V0_5(v0_5::Policy),
    V0_4(v0_4::Policy),
}

/// Makes the call `$call` (an expression of `$g`, the generated bindings)
/// on whichever contract `$guest` was built for, and converts the answer
/// to the host's type. Arguments converted inside `$call` with
/// `.mirror()` take each version's generated type.
macro_rules! on_guest {
    ($guest:expr, $g:ident => $call:expr) => {{
        #[allow(unused_imports)]
        use policy_types::Mirror as _;
        match $guest {
            $crate::policy::bindings::Guest::Current($g) => $call.map(policy_types::Mirror::mirror),
            $crate::policy::bindings::Guest::V0_7($g) => $call.map(policy_types::Mirror::mirror),
            $crate::policy::bindings::Guest::V0_6($g) => $call.map(policy_types::Mirror::mirror),
            $crate::policy::bindings::Guest::V0_5($g) => $call.map(policy_types::Mirror::mirror),
            $crate::policy::bindings::Guest::V0_4($g) => $call.map(policy_types::Mirror::mirror),
        }
    }};
}
pub(crate) use on_guest;
