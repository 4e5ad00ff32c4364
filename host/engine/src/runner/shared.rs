//! The [`Runner`]: what lasts across runs — the active policy, the config,
//! the state stores, the provider, the clock, the probe throttle, model
//! health and counters. The entry points that start a run are in
//! `driver`; what a run asks of the runner is in `plan` and `ledger`.

use std::sync::{Arc, Mutex, RwLock};

use crate::config::Config;
use crate::state::{AuthStore, SessionStore};
use failover_policy::Decider;
// Keyed by configured provider and profile ids, not by what clients send:
// the fast hash needs no guard against chosen collisions.
use rustc_hash::FxHashMap as HashMap;

use super::counters::Counters;
use super::health::HealthBook;
use super::provider::Provider;
use crate::time::Clock;

/// A success that changes nothing but a profile's `lastUsed` is written at
/// most this often per profile. One fsync'd write per request capped a
/// gateway near 1,800 requests/s on the project's machine (docs/performance.md);
/// this process keeps the exact time in memory for its own ordering, other
/// processes see it to the second.
pub const LAST_USED_WRITE_INTERVAL_MS: u64 = 1_000;

/// The longest wait on a `Retry-After` when nothing else remains (F-6.8):
/// the seeds' SDK cap. Longer hints are surfaced at once.
pub(crate) const DEFAULT_RETRY_WAIT_CAP_MS: u64 = 60_000;

/// Runs requests through the chain. Share it (`Arc`); concurrent runs are
/// safe (state changes are locked and atomic).
pub struct Runner<P, C> {
    /// The active policy. A run takes it once at its start and keeps it to
    /// the end, so swapping it never changes a run in flight.
    policy: RwLock<Arc<dyn Decider>>,
    pub(super) config: Config,
    pub(super) store: AuthStore,
    pub(super) sessions: SessionStore,
    pub(super) provider: P,
    pub(super) clock: C,
    /// Last probe per provider (the F-8.3 throttle), kept across runs.
    pub(super) probes: Mutex<HashMap<String, u64>>,
    /// F-6.8: the longest wait on a `Retry-After`; 0 never waits.
    pub(super) retry_wait_cap_ms: u64,
    /// Successes not yet written (see [`LAST_USED_WRITE_INTERVAL_MS`]):
    /// profile id → when it last served.
    pub(super) recent_use: Mutex<HashMap<String, u64>>,
    /// When this process last set out to write a profile's `lastUsed`:
    /// concurrent successes that see the same old stored time write once
    /// between them, not once each.
    pub(super) last_used_claims: Mutex<HashMap<String, u64>>,
    /// Each model's responsiveness (F-12.3), kept across runs.
    pub(super) health: HealthBook,
    /// Failures around served replies.
    pub(super) counters: Counters,
}

impl<P: Provider, C: Clock> Runner<P, C> {
    /// A runner deciding with `policy`.
    pub fn new(
        policy: Arc<dyn Decider>,
        config: Config,
        store: AuthStore,
        sessions: SessionStore,
        provider: P,
        clock: C,
    ) -> Self {
        Runner {
            policy: RwLock::new(policy),
            config,
            store,
            sessions,
            provider,
            clock,
            probes: Mutex::new(HashMap::default()),
            retry_wait_cap_ms: DEFAULT_RETRY_WAIT_CAP_MS,
            recent_use: Mutex::new(HashMap::default()),
            last_used_claims: Mutex::new(HashMap::default()),
            health: HealthBook::default(),
            counters: Counters::default(),
        }
    }

    /// Sets the longest wait on a `Retry-After` (F-6.8); 0 disables waiting.
    pub fn with_retry_wait_cap(mut self, ms: u64) -> Self {
        self.retry_wait_cap_ms = ms;
        self
    }

    /// The policy new runs use.
    pub fn policy(&self) -> Arc<dyn Decider> {
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes `policy` the one new runs use; runs in flight finish on the
    /// one they started with. Returns the previous one.
    pub fn swap_policy(&self, policy: Arc<dyn Decider>) -> Arc<dyn Decider> {
        std::mem::replace(
            &mut *self.policy.write().unwrap_or_else(|e| e.into_inner()),
            policy,
        )
    }

    /// The config it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The auth store it records profile state in.
    pub fn store(&self) -> &AuthStore {
        &self.store
    }

    /// The session store the runner writes overrides to.
    pub fn sessions(&self) -> &SessionStore {
        &self.sessions
    }

    /// The provider (for tests that script it).
    pub fn provider(&self) -> &P {
        &self.provider
    }

    /// What the runner knows of each model's responsiveness (F-12.3).
    pub fn model_health(&self) -> &HealthBook {
        &self.health
    }

    /// Failures around served replies.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}
