//! The one wasmtime engine a process runs policies on.
//!
//! Configured for sandboxing: fuel metering, epoch interruption (a thread
//! advances the epoch every [`EPOCH_TICK`]), and no WASI anywhere.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use wasmtime::component::Component;

use super::compile_cache::CompileCache;
use failover_policy::{Limits, PolicyError};

/// When set (to anything), compiled policy code is named for `perf` in
/// `/tmp/perf-<pid>.map`, so a profile of the host shows the guest's own
/// functions instead of anonymous JIT addresses. Off by default: the map
/// costs a file write per compiled function.
pub(crate) const PERF_MAP_VAR: &str = "FAILOVER_PERF_MAP";

/// How often the engine's epoch advances; the deadline's resolution.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// `limits`' deadline in epoch ticks, at least one.
pub(crate) fn deadline_ticks(limits: &Limits) -> u64 {
    let ticks = limits.call_deadline.as_millis() / EPOCH_TICK.as_millis().max(1);
    u64::try_from(ticks).unwrap_or(u64::MAX).max(1)
}

/// A compiled-code cache and the settings every policy runs under. Cheap to
/// clone; the epoch thread stops when the last clone is dropped.
#[derive(Clone)]
pub struct PolicyEngine {
    inner: Arc<EngineInner>,
    /// Where compiled modules are kept between processes, if anywhere.
    cache: Option<Arc<CompileCache>>,
}

struct EngineInner {
    engine: wasmtime::Engine,
    stop_ticker: Arc<AtomicBool>,
    /// Fuel metering and the epoch deadline are on.
    metered: bool,
}

impl Drop for EngineInner {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl PolicyEngine {
    /// Creates the engine and starts its epoch thread.
    pub fn new() -> Result<Self, PolicyError> {
        Self::build(true)
    }

    /// An engine without fuel metering or the epoch deadline: only the
    /// memory cap and the input bounds hold. It exists to measure what the
    /// sandbox costs (`benches/sandbox.rs`); never run an untrusted module
    /// on it.
    pub fn unmetered() -> Result<Self, PolicyError> {
        Self::build(false)
    }

    /// Whether calls are metered (fuel and epoch deadline).
    pub fn metered(&self) -> bool {
        self.inner.metered
    }

    fn build(metered: bool) -> Result<Self, PolicyError> {
        let mut config = wasmtime::Config::new();
        config.consume_fuel(metered);
        config.epoch_interruption(metered);
        config.wasm_component_model(true);
        if std::env::var_os(PERF_MAP_VAR).is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = wasmtime::Engine::new(&config).map_err(super::error::engine_error)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        let weak = engine.weak();
        let stop = Arc::clone(&stop_ticker);
        thread::Builder::new()
            .name("failover-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| PolicyError::Engine(format!("cannot start the epoch thread: {e}")))?;
        Ok(PolicyEngine {
            inner: Arc::new(EngineInner {
                engine,
                stop_ticker,
                metered,
            }),
            cache: None,
        })
    }

    /// This engine, keeping compiled modules in `cache` (see
    /// [`CompileCache`]): a process that loads a module compiled before
    /// skips Cranelift.
    pub fn with_compile_cache(mut self, cache: CompileCache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Compiles a component whose SHA-256 (lowercase hex) is `sha256`,
    /// through the cache when there is one.
    pub(crate) fn compile(&self, bytes: &[u8], sha256: &str) -> wasmtime::Result<Component> {
        match &self.cache {
            Some(cache) => cache.component(self.wasmtime(), bytes, sha256),
            None => Component::new(self.wasmtime(), bytes),
        }
    }

    pub(crate) fn wasmtime(&self) -> &wasmtime::Engine {
        &self.inner.engine
    }
}

impl std::fmt::Debug for PolicyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyEngine").finish_non_exhaustive()
    }
}
