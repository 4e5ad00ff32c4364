//! The Redis backend: one agent's routing state and sessions shared by
//! every replica of a gateway (`state.backend: "redis"`).
//!
//! Keys are `<prefix>:<agent>:usage:<profile id>` (the profile's `Usage`
//! as JSON, expiring once it is stale, see `usage_ttl_ms`) and
//! `<prefix>:<agent>:session:<session id>` (`{"at": ms, "entry": {…}}`, no
//! expiry). Secrets never go there: each replica keeps its own
//! `auth-profiles.json`, and profiles are matched by id.
//!
//! Nothing is cached across calls while Redis answers: every read goes to
//! Redis, so a change one replica makes is what every other sees on its
//! next decision. Every change is an optimistic compare-and-set (see
//! `cas`). When Redis is unreachable or slower than `timeoutMs`, the
//! replica serves from its local copy (`mirror`) — the last state it saw
//! plus its own changes — logs a warning, reports itself degraded, and
//! tries Redis again each second; when Redis answers, the local changes
//! are merged into it (`merge`, `reconcile`) before it is used again.

mod cas;
mod health;
mod merge;
mod mirror;
mod pool;
mod reconcile;
mod session_ops;
mod usage_ops;

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use redis::{Connection, RedisResult};
use serde::de::DeserializeOwned;

use crate::auth::Usage;
use crate::state::{SessionEntry, StateError};

use health::{Gate, Health};
use mirror::Mirror;

pub use health::HealthView;
pub use pool::RedisPool;

/// Optimistic writes tried at most before a change gives up: each retry
/// means another replica changed the same key in between, and changes of
/// one key within a process are already serialised, so a handful of
/// replicas never come near this.
const MAX_CAS_ATTEMPTS: usize = 100;

/// The shortest expiry given to a profile's entry: a replica whose clock
/// runs behind must not write an entry that expires at once.
const MIN_USAGE_TTL_MS: u64 = 60_000;

/// Locks that serialise this process's changes of the same key (a key
/// hashes to one): concurrent changes of one profile then retry only
/// against other replicas, while changes of different keys go on in
/// parallel.
const UPDATE_STRIPES: usize = 64;

/// One agent's shared state. Clones share the connection pool, the
/// health, and the local copy.
#[derive(Debug, Clone)]
pub struct SharedState {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: Arc<RedisPool>,
    agent: String,
    /// `<prefix>:<agent>:`.
    base: String,
    /// `auth.cooldowns.failureWindowHours` in ms: how long a quiet entry
    /// stays (F-6.6).
    failure_window_ms: u64,
    /// Changes fail rather than go to the local copy (the command line:
    /// its process ends before anything could reconcile them).
    strict: bool,
    health: Health,
    mirror: Mutex<Mirror>,
    stripes: Vec<Mutex<()>>,
    /// Keys whose unreadable value was already logged.
    warned: Mutex<HashSet<String>>,
}

/// A change as applied: its result and the values before and after.
#[derive(Debug)]
pub struct Applied<T, V> {
    /// What the change returned.
    pub result: T,
    /// The values it found.
    pub before: V,
    /// The values it left.
    pub after: V,
}

/// Profiles' routing state by id, as a change applied it.
pub(crate) type AppliedUsage<T> = Applied<T, BTreeMap<String, Usage>>;

/// An agent's whole shared state: routing state by profile id, sessions by id.
pub(crate) type Exported = (BTreeMap<String, Usage>, BTreeMap<String, SessionEntry>);

/// What one try of an optimistic change came to.
// Returned once per try and matched at once: boxing the large variant
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Try<R> {
    /// Applied, refused, or failed for good.
    Done(Result<R, StateError>),
    /// Another replica changed a key meanwhile, or Redis came back: again.
    Again,
}

/// The backend's state for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedStatus {
    /// The server, its password hidden.
    pub url: String,
    /// Whether it answers, since when not, and why.
    pub health: HealthView,
    /// Local changes waiting to be reconciled.
    pub pending: usize,
}

impl SharedState {
    /// `agent`'s state on the server `pool` connects to, under `prefix`.
    /// `strict`: a change Redis cannot take is an error instead of a
    /// change of the local copy.
    pub fn new(
        pool: Arc<RedisPool>,
        prefix: &str,
        agent: &str,
        failure_window_ms: u64,
        strict: bool,
    ) -> Self {
        SharedState {
            inner: Arc::new(Inner {
                pool,
                agent: agent.to_owned(),
                base: format!("{prefix}:{agent}:"),
                failure_window_ms,
                strict,
                health: Health::new(),
                mirror: Mutex::new(Mirror::default()),
                stripes: (0..UPDATE_STRIPES).map(|_| Mutex::new(())).collect(),
                warned: Mutex::new(HashSet::new()),
            }),
        }
    }

    fn mirror(&self) -> MutexGuard<'_, Mirror> {
        self.inner.mirror.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock serialising this process's changes of `keys`.
    fn stripe(&self, keys: &[String]) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        keys.hash(&mut hasher);
        let index = usize::try_from(hasher.finish() % UPDATE_STRIPES as u64).unwrap_or(0);
        self.inner.stripes[index]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    fn usage_key(&self, id: &str) -> String {
        format!("{}usage:{id}", self.inner.base)
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}session:{id}", self.inner.base)
    }

    /// The server's URL, its password hidden.
    pub fn url(&self) -> &str {
        self.inner.pool.shown_url()
    }

    /// Health and pending changes.
    pub fn status(&self) -> SharedStatus {
        let health = self.inner.health.view();
        SharedStatus {
            url: self.url().to_owned(),
            health,
            pending: self.mirror().pending(),
        }
    }

    /// Runs `op` on Redis, or `None` when it is down (the caller uses the
    /// local copy). A caller due to probe a down Redis reconciles first.
    /// Off the async workers: a slow Redis holds only this request.
    fn call<T>(&self, op: impl FnMut(&mut Connection) -> RedisResult<T>) -> Option<T> {
        crate::state::blocking::off_async(|| self.call_here(op))
    }

    fn call_here<T>(&self, mut op: impl FnMut(&mut Connection) -> RedisResult<T>) -> Option<T> {
        let gate = self.inner.health.gate();
        if gate == Gate::Skip {
            return None;
        }
        let probe = gate == Gate::Probe;
        if probe {
            match self.reconcile() {
                Ok(reconciled) => tracing::warn!(
                    store = %self.url(),
                    agent = %self.inner.agent,
                    reconciled,
                    "state store reachable again; local changes merged into it"
                ),
                Err(error) => {
                    self.failed(error, true);
                    return None;
                }
            }
        }
        // A connection that sat idle may have died there (a server's idle
        // timeout, a load balancer): one that fails is retried once on a
        // new connection before Redis counts as down.
        for fresh in [false, true] {
            let mut connection = match self.inner.pool.get(fresh) {
                Ok(connection) => connection,
                Err(error) => {
                    self.failed(error, probe);
                    return None;
                }
            };
            match op(&mut connection) {
                Ok(value) => return Some(value),
                Err(error) if connection.reused() && !fresh && is_connection_error(&error) => {
                    connection.discard();
                }
                Err(error) => {
                    self.failed(error.to_string(), probe);
                    return None;
                }
            }
        }
        None
    }

    fn failed(&self, error: String, probe: bool) {
        // The client's messages name hosts and system errors, never the
        // URL's password; hide it anyway should one ever quote the URL.
        let error = self.inner.pool.hide(&error);
        self.inner.pool.discard_all();
        if self.inner.health.failed(error.clone(), probe) {
            tracing::warn!(
                store = %self.url(),
                agent = %self.inner.agent,
                %error,
                "state store unreachable; serving from this replica's local copy until it returns"
            );
        }
    }

    /// A stored value, or `None` when it does not parse — a value of a
    /// newer build, or a hand edit: it is logged once and treated as
    /// absent, so that one bad key never fails requests (the next change
    /// of it replaces it).
    fn parse<T: DeserializeOwned>(&self, key: &str, raw: &str) -> Option<T> {
        match serde_json::from_str(raw) {
            Ok(value) => Some(value),
            Err(error) => {
                let new = self
                    .inner
                    .warned
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key.to_owned());
                if new {
                    tracing::warn!(
                        store = %self.url(),
                        key,
                        column = error.column(),
                        "a stored value does not parse; it is treated as absent until it is replaced"
                    );
                }
                None
            }
        }
    }

    /// Runs `attempt` until it is done, at most [`MAX_CAS_ATTEMPTS`] times.
    fn until_done<R>(&self, mut attempt: impl FnMut() -> Try<R>) -> Result<R, StateError> {
        for _ in 0..MAX_CAS_ATTEMPTS {
            if let Try::Done(done) = attempt() {
                return done;
            }
        }
        Err(StateError::Store {
            store: self.url().to_owned(),
            message: contended().to_string(),
        })
    }

    /// The error of a change Redis could not take, in strict mode.
    fn unreachable(&self) -> StateError {
        let error = self.inner.health.view().error;
        StateError::Store {
            store: self.url().to_owned(),
            message: format!(
                "unreachable ({}); the change was not made",
                error.as_deref().unwrap_or("no answer")
            ),
        }
    }

    /// A connection now, or the error (no local copy to fall back to).
    fn strict_connection(&self) -> Result<pool::Pooled<'_>, StateError> {
        self.inner
            .pool
            .get(true)
            .map_err(|message| StateError::Store {
                store: self.url().to_owned(),
                message: self.inner.pool.hide(&message),
            })
    }

    fn store_error(&self, error: redis::RedisError) -> StateError {
        StateError::Store {
            store: self.url().to_owned(),
            message: self.inner.pool.hide(&error.to_string()),
        }
    }

    /// The ids of this agent's keys of one kind (`usage:`, `session:`).
    fn ids_under(
        &self,
        connection: &mut Connection,
        kind: &str,
    ) -> Result<Vec<String>, StateError> {
        let prefix = format!("{}{kind}", self.inner.base);
        let pattern = format!("{}*", cas::glob_escape(&prefix));
        let keys = cas::scan(connection, &pattern).map_err(|e| self.store_error(e))?;
        Ok(keys
            .into_iter()
            .filter_map(|key| key.strip_prefix(&prefix).map(str::to_owned))
            .collect())
    }

    /// Every profile's routing state and every session, straight from
    /// Redis (no local copy): what `failover state migrate` moves. A value
    /// that does not parse is an error here: a migration must not drop it.
    pub fn export(&self) -> Result<Exported, StateError> {
        let mut connection = self.strict_connection()?;
        let ids = self.ids_under(&mut connection, "usage:")?;
        let keys: Vec<String> = ids.iter().map(|id| self.usage_key(id)).collect();
        let raws = cas::read(&mut connection, &keys).map_err(|e| self.store_error(e))?;
        let mut usage = BTreeMap::new();
        for ((id, key), raw) in ids.into_iter().zip(&keys).zip(raws) {
            if let Some(raw) = raw {
                usage.insert(id, self.parse_strict(key, &raw)?);
            }
        }
        let sessions = self.export_sessions(&mut connection)?;
        Ok((usage, sessions))
    }

    fn parse_strict<T: DeserializeOwned>(&self, key: &str, raw: &str) -> Result<T, StateError> {
        serde_json::from_str(raw).map_err(|error| StateError::Store {
            store: format!("{} key {key}", self.url()),
            message: format!(
                "not a value this build reads (at column {}); it was left as it is",
                error.column()
            ),
        })
    }

    /// Writes `usage` and `sessions` over what Redis holds for the same
    /// ids, straight to Redis (an error if it is unreachable).
    pub fn import(
        &self,
        usage: &BTreeMap<String, Usage>,
        sessions: &BTreeMap<String, SessionEntry>,
    ) -> Result<(), StateError> {
        let mut connection = self.strict_connection()?;
        let mut pipe = redis::pipe();
        for (id, value) in usage {
            let write = self.usage_write(id, None, Some(value));
            pipe.cmd("SET")
                .arg(&write.key)
                .arg(write.value.unwrap_or_default())
                .arg("PX")
                .arg(write.ttl_ms)
                .ignore();
        }
        self.import_sessions(&mut pipe, sessions);
        pipe.query::<()>(&mut *connection)
            .map_err(|e| self.store_error(e))
    }
}

/// Whether `error` says the connection is gone (rather than a refusal by
/// a server that answered).
fn is_connection_error(error: &redis::RedisError) -> bool {
    error.is_io_error() || error.is_connection_dropped() || error.is_timeout()
}

/// The error of a change that lost the race too often.
fn contended() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Client,
        "other replicas kept changing the same state",
        format!("the change was retried {MAX_CAS_ATTEMPTS} times and not applied"),
    ))
}
