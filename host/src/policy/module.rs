//! A loaded policy module: checked against the contract, described, and run
//! on warm instances.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, Linker};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};

use super::bindings::{self, PolicyPre, CONTRACT, CONTRACT_PACKAGE, CONTRACT_VERSION};
use super::engine::PolicyEngine;
use super::error::PolicyError;
use super::limits::Limits;
use crate::classification::Classification;
use crate::provider_error::ProviderError;
use crate::report::{self, FlatReport};

/// Most idle instances kept per module. Instances are cheap to keep (a few
/// MiB each) and dear to make (~90 µs), so keep one per concurrent caller a
/// busy gateway is likely to have, no more.
const MAX_WARM_INSTANCES: usize = 16;

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
    /// The contract it was built for (`failover:policy@0.1.0`).
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

/// Counters for one module since it was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicyStats {
    /// Calls made into the module.
    pub calls: u64,
    /// Instances created (the first, and one after every trap).
    pub instantiations: u64,
    /// Calls that trapped.
    pub traps: u64,
}

#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    instantiations: AtomicU64,
    traps: AtomicU64,
}

struct StoreState {
    limits: StoreLimits,
}

/// An instance ready for calls, with the limits generation it was made for.
struct Warm {
    store: Store<StoreState>,
    bindings: bindings::Policy,
    generation: u64,
}

/// A policy module that passed the contract checks.
///
/// Calls run on warm instances (the guest is stateless, so reuse is safe);
/// an instance that traps is discarded and the next call gets a fresh one.
pub struct Policy {
    engine: PolicyEngine,
    pre: PolicyPre<StoreState>,
    version: PolicyVersion,
    limits: RwLock<(Limits, u64)>,
    warm: Mutex<Vec<Warm>>,
    counters: Counters,
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
        let component =
            Component::new(wasmtime, bytes).map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        check_contract(wasmtime, &component)?;
        let linker = Linker::<StoreState>::new(wasmtime);
        let instance_pre = linker
            .instantiate_pre(&component)
            .map_err(|e| PolicyError::Compile(format!("{e:#}")))?;
        let pre = PolicyPre::new(instance_pre)
            .map_err(|e| PolicyError::MissingExport(format!("{e:#}")))?;
        let mut policy = Policy {
            engine: engine.clone(),
            pre,
            version: PolicyVersion {
                name: String::new(),
                version: String::new(),
                contract: String::new(),
                sha256: hex_sha256(bytes),
            },
            limits: RwLock::new((limits, 0)),
            warm: Mutex::new(Vec::new()),
            counters: Counters::default(),
        };
        let info = policy.call("describe", |store, guest| {
            guest.failover_policy_meta().call_describe(store)
        })?;
        policy.version.name = bounded("name", info.name)?;
        policy.version.version = bounded("version", info.version)?;
        policy.version.contract = bounded("contract", info.contract)?;
        if policy.version.contract != CONTRACT {
            return Err(PolicyError::ContractMismatch {
                found: policy.version.contract.clone(),
                expected: CONTRACT,
            });
        }
        Ok(policy)
    }

    /// The embedded default policy.
    pub fn default_policy(engine: &PolicyEngine) -> Result<Policy, PolicyError> {
        Policy::load(engine, super::DEFAULT_POLICY, Limits::default())
    }

    /// Which module this is.
    pub fn version(&self) -> &PolicyVersion {
        &self.version
    }

    /// The limits calls run under.
    pub fn limits(&self) -> Limits {
        self.limits
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// Changes the limits; idle instances made under the old ones are dropped.
    pub fn set_limits(&self, limits: Limits) {
        let mut guard = self.limits.write().unwrap_or_else(PoisonError::into_inner);
        guard.0 = limits;
        guard.1 += 1;
        drop(guard);
        self.warm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Counters since the module was loaded.
    pub fn stats(&self) -> PolicyStats {
        PolicyStats {
            calls: self.counters.calls.load(Ordering::Relaxed),
            instantiations: self.counters.instantiations.load(Ordering::Relaxed),
            traps: self.counters.traps.load(Ordering::Relaxed),
        }
    }

    /// Classifies a failed provider call. The error is flattened and cut to
    /// the input limits before it reaches the module.
    pub fn classify(
        &self,
        error: &ProviderError,
        now_ms: u64,
    ) -> Result<Classification, PolicyError> {
        let report = report::flatten(error, now_ms, &self.limits());
        self.classify_flat(&report)
    }

    /// Classifies an already flattened report (cut to the limits by the caller).
    pub fn classify_flat(&self, report: &FlatReport) -> Result<Classification, PolicyError> {
        let input = bindings::report_to_wit(report);
        let verdict = self.call("classify", |store, guest| {
            guest
                .failover_policy_classifier()
                .call_classify(store, &input)
        })?;
        if verdict
            .retry_after_ms
            .is_some_and(|ms| ms > MAX_RETRY_AFTER_MS)
        {
            return Err(PolicyError::InvalidOutput {
                call: "classify",
                problem: format!(
                    "a retry-after of {} ms is beyond the {MAX_RETRY_AFTER_MS} ms bound",
                    verdict.retry_after_ms.unwrap_or_default()
                ),
            });
        }
        Ok(bindings::classification_from_wit(verdict))
    }

    /// Runs `f` on a warm instance under the current limits.
    fn call<T>(
        &self,
        name: &'static str,
        f: impl FnOnce(&mut Store<StoreState>, &bindings::Policy) -> wasmtime::Result<T>,
    ) -> Result<T, PolicyError> {
        let (limits, generation) = self
            .limits
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let idle = self
            .warm
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut warm = match idle {
            Some(warm) if warm.generation == generation => warm,
            _ => self.instantiate(&limits, generation)?,
        };
        self.counters.calls.fetch_add(1, Ordering::Relaxed);
        warm.store
            .set_fuel(limits.fuel_per_call)
            .map_err(PolicyError::engine)?;
        warm.store.set_epoch_deadline(limits.deadline_ticks());
        match f(&mut warm.store, &warm.bindings) {
            Ok(value) => {
                let mut idle = self.warm.lock().unwrap_or_else(PoisonError::into_inner);
                if idle.len() < MAX_WARM_INSTANCES {
                    idle.push(warm);
                }
                Ok(value)
            }
            Err(error) => {
                // A trapped instance refuses further calls; it is dropped here.
                self.counters.traps.fetch_add(1, Ordering::Relaxed);
                Err(PolicyError::trap(name, &error))
            }
        }
    }

    fn instantiate(&self, limits: &Limits, generation: u64) -> Result<Warm, PolicyError> {
        let state = StoreState {
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.max_memory_bytes)
                .trap_on_grow_failure(true)
                .instances(1)
                .build(),
        };
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limits);
        store
            .set_fuel(limits.fuel_per_call)
            .map_err(PolicyError::engine)?;
        store.set_epoch_deadline(limits.deadline_ticks());
        let bindings = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| PolicyError::trap("instantiate", &e))?;
        self.counters.instantiations.fetch_add(1, Ordering::Relaxed);
        Ok(Warm {
            store,
            bindings,
            generation,
        })
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// Refuses imports and checks the contract version of the exports, so a
/// module built for another contract gets a message that says so rather than
/// a missing-export error.
fn check_contract(engine: &wasmtime::Engine, component: &Component) -> Result<(), PolicyError> {
    let ty = component.component_type();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    if !imports.is_empty() {
        return Err(PolicyError::ForeignImports {
            imports,
            contract: CONTRACT,
        });
    }
    let mut found_ours = false;
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
        if version != CONTRACT_VERSION {
            return Err(PolicyError::ContractMismatch {
                found: format!("{CONTRACT_PACKAGE}@{version}"),
                expected: CONTRACT,
            });
        }
        found_ours = true;
    }
    if !found_ours {
        return Err(PolicyError::MissingExport(format!(
            "{CONTRACT_PACKAGE}/classifier@{CONTRACT_VERSION}"
        )));
    }
    Ok(())
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
