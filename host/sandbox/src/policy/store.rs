//! The state of an instance's store: the memory, table and instance
//! limits it grows under, and what they refused.

use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};

use failover_policy::Limits;

/// Most core instances one module's instance may hold: a Rust policy has
/// one; componentize-py's output links an interpreter, its C library and
/// WASI adapters (about ten). Each is bounded by the memory limit anyway.
const MAX_CORE_INSTANCES: usize = 32;

/// What each instance's store holds: the limits it grows under, and
/// whether they refused it memory.
pub(crate) struct StoreState {
    limits: StoreLimits,
    /// The limits refused a memory growth during the current call: a trap
    /// that follows is the module running out of memory, whatever
    /// instruction reports it (a Rust guest aborts with `unreachable`).
    memory_refused: bool,
}

impl StoreState {
    /// A store's state under `limits`, nothing refused yet.
    pub(crate) fn new(limits: &Limits) -> Self {
        StoreState {
            limits: StoreLimitsBuilder::new()
                .memory_size(limits.max_memory_bytes)
                .trap_on_grow_failure(true)
                .instances(MAX_CORE_INSTANCES)
                .build(),
            memory_refused: false,
        }
    }

    /// The limits refused a memory growth during the current call.
    pub(crate) fn memory_refused(&self) -> bool {
        self.memory_refused
    }
}

impl ResourceLimiter for StoreState {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum);
        if !matches!(allowed, Ok(true)) {
            self.memory_refused = true;
        }
        allowed
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_refused = true;
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}
