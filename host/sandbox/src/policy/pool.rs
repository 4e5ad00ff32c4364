//! Warm instances of one policy module, and the limits they run under.
//!
//! The guest is stateless, so an instance can serve call after call; making
//! one costs far more than a call. An instance that traps refuses further
//! calls, so it is dropped and the next call makes a fresh one. One mutex
//! guards the idle list, the limits and the counters: a call takes it once
//! to borrow an instance and once to give it back.

use std::sync::{Mutex, MutexGuard, PoisonError};

use wasmtime::Store;

use super::bindings::{Guest, GuestPre};
use super::engine::PolicyEngine;
use super::store::StoreState;
use failover_policy::{Limits, PolicyError, PolicyStats};

/// Most idle instances kept per module. Instances are cheap to keep (a few
/// MiB each) and dear to make (~90 µs), so keep one per concurrent caller a
/// busy gateway is likely to have, no more.
const MAX_WARM_INSTANCES: usize = 16;

/// An instance ready for calls, with the limits generation it was made for.
struct Warm {
    store: Store<StoreState>,
    guest: Guest,
    generation: u64,
}

struct PoolState {
    limits: Limits,
    /// Bumped by every change of limits; instances of older generations are
    /// dropped instead of reused.
    generation: u64,
    /// Boxed: a store and its bindings are several hundred bytes, which
    /// moved in and out of the list by value would be five copies a call.
    #[allow(clippy::vec_box)]
    idle: Vec<Box<Warm>>,
    stats: PolicyStats,
}

pub(crate) struct InstancePool {
    engine: PolicyEngine,
    pre: GuestPre,
    state: Mutex<PoolState>,
}

impl InstancePool {
    pub(crate) fn new(engine: &PolicyEngine, pre: GuestPre, limits: Limits) -> Self {
        InstancePool {
            engine: engine.clone(),
            pre,
            state: Mutex::new(PoolState {
                limits,
                generation: 0,
                idle: Vec::new(),
                stats: PolicyStats::default(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // The state is plain data updated in single steps; a panic elsewhere
        // cannot leave it half-written, so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn limits(&self) -> Limits {
        self.lock().limits
    }

    pub(crate) fn set_limits(&self, limits: Limits) {
        let mut state = self.lock();
        state.limits = limits;
        state.generation += 1;
        state.idle.clear();
    }

    pub(crate) fn stats(&self) -> PolicyStats {
        self.lock().stats
    }

    /// Runs `f` on a warm instance under the current limits.
    pub(crate) fn call<T>(
        &self,
        name: &'static str,
        f: impl FnOnce(&mut Store<StoreState>, &Guest) -> wasmtime::Result<T>,
    ) -> Result<T, PolicyError> {
        let (idle, limits, generation) = {
            let mut state = self.lock();
            state.stats.calls += 1;
            let idle = state.idle.pop();
            (idle, state.limits, state.generation)
        };
        let mut warm = match idle {
            Some(warm) if warm.generation == generation => warm,
            _ => self.instantiate(&limits, generation)?,
        };
        if self.engine.metered() {
            warm.store
                .set_fuel(limits.fuel_per_call)
                .map_err(super::error::engine_error)?;
            warm.store
                .set_epoch_deadline(super::engine::deadline_ticks(&limits));
        }
        let result = f(&mut warm.store, &warm.guest);
        let mut state = self.lock();
        match result {
            Ok(value) => {
                let left = warm.store.get_fuel().unwrap_or(limits.fuel_per_call);
                let used = limits.fuel_per_call.saturating_sub(left);
                state.stats.max_fuel_used = state.stats.max_fuel_used.max(used);
                state.stats.total_fuel_used = state.stats.total_fuel_used.saturating_add(used);
                if warm.generation == state.generation && state.idle.len() < MAX_WARM_INSTANCES {
                    state.idle.push(warm);
                }
                Ok(value)
            }
            Err(error) => {
                // A trapped instance refuses further calls; it is dropped here.
                state.stats.traps += 1;
                Err(super::error::trap_error(
                    name,
                    &error,
                    warm.store.data().memory_refused(),
                ))
            }
        }
    }

    fn instantiate(&self, limits: &Limits, generation: u64) -> Result<Box<Warm>, PolicyError> {
        let mut busy = 0;
        loop {
            match self.try_instantiate(limits, generation) {
                Err((error, _)) if busy < BUSY_RETRIES && os_busy(&error) => {
                    busy += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1 << busy));
                }
                Err((error, memory)) => {
                    return Err(super::error::trap_error("instantiate", &error, memory))
                }
                Ok(warm) => return Ok(warm),
            }
        }
    }

    /// One instantiation in a fresh store; an error comes with whether the
    /// limits refused the module memory.
    fn try_instantiate(
        &self,
        limits: &Limits,
        generation: u64,
    ) -> Result<Box<Warm>, (wasmtime::Error, bool)> {
        let mut store = Store::new(self.engine.wasmtime(), StoreState::new(limits));
        store.limiter(|state| state);
        if self.engine.metered() {
            store
                .set_fuel(limits.fuel_per_call)
                .map_err(|e| (e, false))?;
            store.set_epoch_deadline(super::engine::deadline_ticks(limits));
        }
        let guest = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| (e, store.data().memory_refused()))?;
        self.lock().stats.instantiations += 1;
        Ok(Box::new(Warm {
            store,
            guest,
            generation,
        }))
    }
}

/// Instantiations retried when the OS said it was busy. The first
/// instantiation of a module makes its memory image, a sealed memfd; the
/// kernel refuses the seal (EBUSY) while a page of it is briefly pinned,
/// and a moment later grants it. Seen once in a test run that forked
/// cargo builds while loading modules.
const BUSY_RETRIES: u32 = 3;

/// Whether `error` comes from an OS call that found its object busy.
fn os_busy(error: &wasmtime::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ResourceBusy)
    })
}

#[cfg(test)]
mod tests {
    use super::os_busy;
    use std::io::{Error, ErrorKind};

    #[test]
    fn only_a_busy_os_call_anywhere_in_the_chain_is_retried() {
        let sealed = wasmtime::Error::new(Error::from(ErrorKind::ResourceBusy))
            .context("cannot add seals to the memfd")
            .context("instantiating");
        assert!(os_busy(&sealed));
        let denied = wasmtime::Error::new(Error::from(ErrorKind::PermissionDenied));
        assert!(!os_busy(&denied));
        assert!(!os_busy(&wasmtime::format_err!("out of fuel")));
    }
}
