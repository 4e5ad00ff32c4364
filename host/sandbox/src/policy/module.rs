//! A loaded policy module: checked against the contract, described, and
//! called through its pool of warm instances.

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};

use super::bindings::{
    self, on_guest, ContractVersion, Described, GuestPre, CONTRACTS_RUN, CONTRACT_PACKAGE,
    CONTRACT_VERSION,
};
use super::engine::PolicyEngine;
use super::error::PolicyError;
use super::limits::Limits;
use super::pool::{InstancePool, PolicyStats};
use crate::classification::Classification;
use crate::provider_error::ProviderError;
use crate::report::{self, FlatReport};

/// Longest wait a policy may ask for; the guest contract's own bound. A
/// larger `retry-after-ms` in a verdict is an invalid decision.
pub const MAX_RETRY_AFTER_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// Which module is running: what operators see in status output and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVersion {
    /// The module's own name (`failover-default`).
    pub name: String,
    /// The module's own version.
    pub version: String,
    /// The contract it was built for (`failover:policy@0.5.0`).
    pub contract: String,
    /// SHA-256 of the component's bytes, lowercase hex.
    pub sha256: String,
}

impl std::fmt::Display for PolicyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} ({}, sha256:{})",
            self.name,
            self.version,
            self.contract,
            &self.sha256[..12]
        )
    }
}

/// A policy module that passed the contract checks.
///
/// Calls run on warm instances (the guest is stateless, so reuse is safe);
/// an instance that traps is discarded and the next call gets a fresh one.
pub struct Policy {
    version: PolicyVersion,
    contract: ContractVersion,
    pool: InstancePool,
    /// Answers of `candidate-chain`, which carries no clock: see
    /// [`super::memo`].
    pub(crate) chains: super::memo::Memo<policy_types::ChainRequest, policy_types::FallbackChain>,
    /// Answers of `resolve-selection` without a session override, untimed
    /// from contract 0.6.0 on.
    pub(crate) selections:
        super::memo::Memo<policy_types::SelectionRequest, policy_types::Selection>,
    /// Plans of `plan-candidate` that say where else they hold (contract
    /// 0.7.0 on): see [`super::plan_memo`].
    pub(crate) plans: super::plan_memo::PlanMemo,
    /// Answers of `pin-profile`, which carries no clock: see
    /// [`super::pin_memo`].
    pub(crate) pins: super::pin_memo::PinMemo,
}

impl Policy {
    /// Compiles and checks a component: it must import nothing and export the
    /// contract's interfaces at this host's contract version.
    pub fn load(
        engine: &PolicyEngine,
        bytes: &[u8],
        limits: Limits,
    ) -> Result<Policy, PolicyError> {
        let wasmtime = engine.wasmtime();
        // Hashed once: the version operators see, and the compile cache's key.
        let sha256 = hex_sha256(bytes);
        let component = engine
            .compile(bytes, &sha256)
            .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        let contract = check_contract(wasmtime, &component)?;
        let linker = Linker::new(wasmtime);
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        let pre = GuestPre::new(contract, instance_pre)?;
        let pool = InstancePool::new(engine, pre, limits);
        let info: Described = pool.call(
            "describe",
            |store, guest| on_guest!(guest, g => g.failover_policy_meta().call_describe(store)),
        )?;
        let version = PolicyVersion {
            name: bounded("name", info.name)?,
            version: bounded("version", info.version)?,
            contract: bounded("contract", info.contract)?,
            sha256,
        };
        if version.contract != contract.contract() {
            return Err(PolicyError::ContractMismatch {
                found: version.contract,
                expected: CONTRACTS_RUN,
            });
        }
        Ok(Policy {
            version,
            contract,
            pool,
            chains: super::memo::Memo::default(),
            selections: super::memo::Memo::default(),
            plans: super::plan_memo::PlanMemo::default(),
            pins: super::pin_memo::PinMemo::default(),
        })
    }

    /// The embedded default policy.
    pub fn default_policy(engine: &PolicyEngine) -> Result<Policy, PolicyError> {
        Policy::load(engine, super::DEFAULT_POLICY, Limits::default())
    }

    /// Which module this is.
    pub fn version(&self) -> &PolicyVersion {
        &self.version
    }

    /// The contract the module was built for: a [`ContractVersion::V0_4`]
    /// module has no `classify-batch`.
    pub fn contract(&self) -> ContractVersion {
        self.contract
    }

    /// The limits calls run under.
    pub fn limits(&self) -> Limits {
        self.pool.limits()
    }

    /// Changes the limits; idle instances made under the old ones are dropped.
    pub fn set_limits(&self, limits: Limits) {
        self.pool.set_limits(limits);
    }

    /// Counters since the module was loaded.
    pub fn stats(&self) -> PolicyStats {
        self.pool.stats()
    }

    /// Runs `f` on a warm instance of this module (see [`InstancePool::call`]).
    pub(crate) fn call<T>(
        &self,
        name: &'static str,
        f: impl FnOnce(
            &mut wasmtime::Store<super::pool::StoreState>,
            &bindings::Guest,
        ) -> wasmtime::Result<T>,
    ) -> Result<T, PolicyError> {
        self.pool.call(name, f)
    }

    /// Classifies a failed provider call. The error is flattened and cut to
    /// the input limits before it reaches the module.
    pub fn classify(
        &self,
        error: &ProviderError,
        now_ms: u64,
    ) -> Result<Classification, PolicyError> {
        if self.contract.packs_reports() {
            // Packed from the error itself: no owned report first.
            let report = report::flatten_borrowed(error, &self.limits());
            return self.classify_packed(|bytes| report.write_packed(bytes, now_ms));
        }
        self.classify_report(report::flatten(error, now_ms, &self.limits()))
    }

    /// Classifies an already flattened report (see [`report::flatten`]).
    pub fn classify_report(&self, report: FlatReport) -> Result<Classification, PolicyError> {
        self.classify_plain(report.report)
    }

    /// Classifies a report as the contract carries it: packed into bytes
    /// for a module of contract 0.8.0 on, as a record before.
    pub(crate) fn classify_plain(
        &self,
        report: policy_types::ErrorReport,
    ) -> Result<Classification, PolicyError> {
        if self.contract.packs_reports() {
            return self
                .classify_packed(|bytes| policy_types::packed::write_report(bytes, &report));
        }
        self.classify_record(report)
    }

    /// One `classify-packed` call on the report `pack` writes.
    fn classify_packed(
        &self,
        pack: impl FnOnce(&mut Vec<u8>),
    ) -> Result<Classification, PolicyError> {
        let verdict = with_packing_buffer(|bytes| {
            pack(bytes);
            self.pool
                .call("classify-packed", |store, guest| match guest {
                    bindings::Guest::Current(g) => g
                        .failover_policy_classifier()
                        .call_classify_packed(store, bytes)
                        .map(policy_types::Mirror::mirror),
                    _ => Err(wasmtime::format_err!(
                        "a module before 0.8.0 has no classify-packed"
                    )),
                })
        })?;
        checked_verdict("classify-packed", verdict)
    }

    /// `classify` itself, the report crossing as a record: the call a module
    /// before 0.8.0 gets, and the reference the gate holds
    /// `classify-packed` to.
    pub(crate) fn classify_record(
        &self,
        report: policy_types::ErrorReport,
    ) -> Result<Classification, PolicyError> {
        let verdict: Classification = self.pool.call("classify", |store, guest| {
            on_guest!(guest, g => g
                .failover_policy_classifier()
                .call_classify(store, &report.mirror()))
        })?;
        checked_verdict("classify", verdict)
    }
}

/// Runs `f` on this thread's buffer for packed reports, emptied: a report
/// is packed without an allocation of its own. A buffer grown past
/// [`KEPT_PACKING_BYTES`] by a large report is let go afterwards.
pub(crate) fn with_packing_buffer<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    /// The most a thread keeps between reports: a few ordinary ones.
    const KEPT_PACKING_BYTES: usize = 64 * 1024;
    thread_local! {
        static PACKING: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    PACKING.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bytes) => {
            bytes.clear();
            let answer = f(&mut bytes);
            if bytes.capacity() > KEPT_PACKING_BYTES {
                *bytes = Vec::new();
            }
            answer
        }
        // Packing inside packing (not done today): a buffer of its own.
        Err(_) => f(&mut Vec::new()),
    })
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A verdict the host can act on: its wait within the bound.
pub(crate) fn checked_verdict(
    call: &'static str,
    verdict: Classification,
) -> Result<Classification, PolicyError> {
    match verdict.retry_after_ms.filter(|ms| *ms > MAX_RETRY_AFTER_MS) {
        Some(ms) => Err(PolicyError::InvalidOutput {
            call,
            problem: format!(
                "a retry-after of {ms} ms is beyond the {MAX_RETRY_AFTER_MS} ms bound"
            ),
        }),
        None => Ok(verdict),
    }
}

/// Refuses imports and finds the contract version of the exports (all must
/// carry the same one, and one this host runs), so a module built for
/// another contract gets a message that says so rather than a
/// missing-export error.
fn check_contract(
    engine: &wasmtime::Engine,
    component: &Component,
) -> Result<ContractVersion, PolicyError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    if !imports.is_empty() {
        return Err(PolicyError::ForeignImports {
            imports,
            contract: bindings::CONTRACT,
        });
    }
    let mut found: Option<ContractVersion> = None;
    for (name, _) in ty.exports(engine) {
        let Some(rest) = name
            .strip_prefix(CONTRACT_PACKAGE)
            .and_then(|r| r.strip_prefix('/'))
        else {
            continue;
        };
        let version = rest
            .split_once('@')
            .map(|(_, v)| v)
            .unwrap_or("(unversioned)");
        let mismatch = || PolicyError::ContractMismatch {
            found: format!("{CONTRACT_PACKAGE}@{version}"),
            expected: CONTRACTS_RUN,
        };
        let contract = ContractVersion::from_export_version(version).ok_or_else(mismatch)?;
        // Interfaces of two versions in one module: no contract is whole.
        if found.is_some_and(|first| first != contract) {
            return Err(mismatch());
        }
        found = Some(contract);
    }
    found.ok_or_else(|| {
        PolicyError::MissingExport(format!("{CONTRACT_PACKAGE}/classifier@{CONTRACT_VERSION}"))
    })
}

/// Longest name, version or contract string a module may report.
const MAX_INFO_BYTES: usize = 256;

fn bounded(field: &str, value: String) -> Result<String, PolicyError> {
    if value.len() > MAX_INFO_BYTES {
        return Err(PolicyError::InvalidOutput {
            call: "describe",
            problem: format!(
                "its {field} is {} bytes long (at most {MAX_INFO_BYTES})",
                value.len()
            ),
        });
    }
    Ok(value)
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
