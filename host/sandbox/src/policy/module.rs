//! A loaded policy module: checked against the contract, described, and
//! called through its pool of warm instances.

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};

use super::adapter;
use super::bindings::{
    self, ContractVersion, GuestPre, CONTRACTS_RUN, CONTRACT_PACKAGE, CONTRACT_VERSION,
};
use super::engine::PolicyEngine;
use super::memo::{AttemptKey, Memo, RECENT};
use super::pool::InstancePool;
use failover_policy::{
    report::{self, FlatReport},
    Classification, Limits, PolicyError, PolicyStats, PolicyVersion, ProviderError,
};
use policy_types::ErrorReport;

/// Longest wait a policy may ask for; the guest contract's own bound. A
/// larger `retry-after-ms` in a verdict is an invalid decision.
pub(crate) const MAX_RETRY_AFTER_MS: u64 = 7 * 24 * 60 * 60 * 1000;

/// A policy module that passed the contract checks.
///
/// Calls run on pooled instances; an instance that traps is discarded and
/// the next call gets a fresh one. Answers depend on their inputs alone (the
/// contract's promise), so answers to inputs that carry no clock are kept.
pub struct Policy {
    version: PolicyVersion,
    contract: ContractVersion,
    pool: InstancePool,
    /// Checked answers kept by their inputs: see [`super::memo`].
    pub(crate) answers: Answers,
    /// Whether kept answers are given (the gate asks the module itself).
    remembers: std::sync::atomic::AtomicBool,
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
        let mut linker = Linker::new(wasmtime);
        super::wasi::link_standins(&mut linker, &component)
            .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        let pre = GuestPre::new(instance_pre)?;
        let pool = InstancePool::new(engine, pre, limits);
        let info = pool.call("describe", |store, guest| {
            guest.failover_policy_meta().call_describe(store)
        })?;
        let version = PolicyVersion {
            name: bounded("name", info.name)?,
            version: bounded("version", info.version)?,
            contract: contract.contract(),
            sha256,
        };
        Ok(Policy {
            version,
            contract,
            pool,
            answers: Answers::default(),
            remembers: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Whether kept answers are given; when not, every call asks the module.
    pub(crate) fn remember(&self, on: bool) {
        self.remembers
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// `memo`'s answer for `key`, else `compute`'s (kept when it is `Ok`),
    /// or always `compute`'s while answers are not given.
    pub(crate) fn kept<K, V, const N: usize>(
        &self,
        memo: &super::memo::Memo<K, V, N>,
        key: &K,
        compute: impl FnOnce() -> Result<V, PolicyError>,
    ) -> Result<V, PolicyError>
    where
        K: std::hash::Hash + Eq + Clone,
        V: Clone,
    {
        if self.remembers.load(std::sync::atomic::Ordering::Relaxed) {
            memo.get_or_try(key, compute)
        } else {
            compute()
        }
    }

    /// The embedded default policy.
    pub fn default_policy(engine: &PolicyEngine) -> Result<Policy, PolicyError> {
        Policy::load(engine, super::DEFAULT_POLICY, Limits::default())
    }

    /// Which module this is.
    pub fn version(&self) -> &PolicyVersion {
        &self.version
    }

    /// The contract the module was built for.
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
            &mut wasmtime::Store<super::store::StoreState>,
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
        self.kept(&self.answers.verdicts, &(error.clone(), now_ms), || {
            let report = report::flatten_borrowed(error, &self.limits());
            self.classify_lowered(&adapter::error_report(&report, now_ms))
        })
    }

    /// Classifies an already flattened report (see [`report::flatten`]).
    pub fn classify_report(&self, report: FlatReport) -> Result<Classification, PolicyError> {
        self.classify_held(&report.report)
    }

    /// Classifies a report the host holds as the contract's record.
    pub(crate) fn classify_held(
        &self,
        report: &ErrorReport,
    ) -> Result<Classification, PolicyError> {
        self.classify_lowered(&adapter::held_report(report))
    }

    /// One `classify` call, its verdict checked.
    fn classify_lowered(
        &self,
        report: &bindings::v1::wit::ErrorReport,
    ) -> Result<Classification, PolicyError> {
        let verdict = self.pool.call("classify", |store, guest| {
            guest
                .failover_policy_classifier()
                .call_classify(store, report)
        })?;
        checked_verdict(&verdict, report.now_ms)?;
        Ok(adapter::classification(verdict))
    }
}

/// The answers a module's calls have given, by input (see [`super::memo`]).
#[derive(Debug, Default)]
pub(crate) struct Answers {
    /// `plan-run` to requests without a session override.
    pub(crate) plans: Memo<policy_types::RunRequest, policy_types::RunPlan>,
    /// `pin-profile`.
    pub(crate) pins: Memo<policy_types::PinRequest, policy_types::PinDecision, PINS>,
    /// `order-profiles`, by the order as sent.
    pub(crate) orders: Memo<policy_types::OrderRequest, Ranked, RECENT>,
    /// `decide-candidate`.
    pub(crate) candidates:
        Memo<policy_types::CandidateRequest, policy_types::CandidateDecision, RECENT>,
    /// `record-attempt`, by the usage, the event and the settings.
    pub(crate) attempts: Memo<AttemptKey, policy_types::Usage, RECENT>,
    /// `classify`, by the error and the clock it reads a date against.
    pub(crate) verdicts: Memo<(ProviderError, u64), Classification, RECENT>,
    /// `next-step`, whose input carries no clock.
    pub(crate) steps:
        Memo<(policy_types::FailedAttempt, policy_types::RotationConfig), policy_types::RunStep>,
    /// `record-model-attempt`.
    pub(crate) health: Memo<
        (policy_types::ModelHealth, policy_types::AttemptEnd, u64),
        policy_types::ModelHealth,
        RECENT,
    >,
}

/// An order and why each of its blocked profiles is blocked.
pub(crate) type Ranked = (
    Vec<policy_types::RankedProfile>,
    Vec<policy_types::ProfileBlock>,
);

/// How many `pin-profile` questions are kept: the sessions' distinct pins
/// times the provider's distinct orders in a busy stretch, with room.
const PINS: usize = 256;

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A verdict the host can act on: its waits within a week of the call.
fn checked_verdict(
    verdict: &bindings::v1::wit::Classification,
    now_ms: u64,
) -> Result<(), PolicyError> {
    let invalid = |problem: String| PolicyError::InvalidOutput {
        call: "classify",
        problem,
    };
    if let Some(ms) = verdict.retry_after_ms.filter(|ms| *ms > MAX_RETRY_AFTER_MS) {
        return Err(invalid(format!(
            "a retry-after of {ms} ms is beyond the {MAX_RETRY_AFTER_MS} ms bound"
        )));
    }
    let latest = now_ms.saturating_add(MAX_RETRY_AFTER_MS);
    if let Some(at) = verdict.reset_at_ms.filter(|at| *at > latest) {
        return Err(invalid(format!(
            "a reset time of {at} is more than a week after {now_ms}"
        )));
    }
    Ok(())
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
    let imports = super::wasi::foreign_imports(engine, component);
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
