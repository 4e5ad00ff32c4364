//! Opening an agent's stores on the configured backend (`state.backend`):
//! the files of the state directory, or Redis for routing state and
//! sessions (the profiles and their secrets stay in the file either way).

use std::sync::Arc;

use crate::config::{BackendKind, Config};

use super::error::StateError;
use super::paths::StateDir;
use super::sessions::SessionStore;
use super::shared::{RedisPool, SharedState};
use super::store::AuthStore;

/// Where an agent's routing state and sessions live.
#[derive(Debug, Clone)]
pub struct Backend {
    kind: BackendKind,
    /// The Redis pool, one per process, shared by every agent.
    pool: Option<Arc<RedisPool>>,
    prefix: String,
    failure_window_ms: u64,
    /// Changes Redis cannot take are errors, not local changes.
    strict: bool,
}

impl Backend {
    /// The backend `config` names. Nothing is connected yet: an
    /// unreachable Redis degrades the stores, it does not stop a start.
    pub fn from_config(config: &Config) -> Result<Backend, StateError> {
        Backend::of_kind(config, config.state.backend)
    }

    /// The backend of `kind`, with `config`'s Redis settings (for a
    /// migration, which uses both).
    pub fn of_kind(config: &Config, kind: BackendKind) -> Result<Backend, StateError> {
        let pool = match kind {
            BackendKind::Files => None,
            BackendKind::Redis => Some(Arc::new(RedisPool::new(&config.state.redis)?)),
        };
        Ok(Backend {
            kind,
            pool,
            prefix: config.state.redis.prefix().to_owned(),
            failure_window_ms: config.cooldown_config().failure_window_ms,
            strict: false,
        })
    }

    /// The same backend for a short-lived process (a command-line change):
    /// a change Redis cannot take fails instead of going to a local copy
    /// that would end with the process, never reconciled.
    pub fn strict(mut self) -> Backend {
        self.strict = true;
        self
    }

    /// Which backend it is.
    pub fn kind(&self) -> BackendKind {
        self.kind
    }

    /// `agent`'s auth store and session store.
    pub fn open(
        &self,
        state_dir: &StateDir,
        agent: &str,
    ) -> Result<(AuthStore, SessionStore), StateError> {
        let paths = state_dir.agent(agent)?;
        let sessions = SessionStore::for_agent(&paths.dir);
        let store = AuthStore::open(paths)?;
        Ok(match self.shared(agent) {
            Some(shared) => (
                store.with_shared(shared.clone()),
                sessions.with_shared(shared),
            ),
            None => (store, sessions),
        })
    }

    /// `agent`'s Redis state, on the Redis backend.
    pub fn shared(&self, agent: &str) -> Option<SharedState> {
        let pool = self.pool.as_ref()?;
        Some(SharedState::new(
            pool.clone(),
            &self.prefix,
            agent,
            self.failure_window_ms,
            self.strict,
        ))
    }
}
