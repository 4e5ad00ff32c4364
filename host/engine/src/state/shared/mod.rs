//! The Redis backend: one agent's routing state and sessions shared by
//! every replica of a gateway (`state.backend: "redis"`).
//!
//! Keys are `<prefix>:<agent>:usage:<profile id>` (the profile's `Usage`
//! as JSON, expiring once it is stale, see [`merge::usage_ttl_ms`]) and
//! `<prefix>:<agent>:session:<session id>` (`{"at": ms, "entry": {…}}`, no
//! expiry). Secrets never go there: each replica keeps its own
//! `auth-profiles.json`, and profiles are matched by id.
//!
//! Nothing is cached across calls while Redis answers: every read goes to
//! Redis, so a change one replica makes is what every other sees on its
//! next decision. Every change is an optimistic compare-and-set (see
//! [`cas`]). When Redis is unreachable or slower than `timeoutMs`, the
//! replica serves from its local copy ([`mirror`]) — the last state it saw
//! plus its own changes — logs a warning, reports itself degraded, and
//! tries Redis again each second; when Redis answers, the local changes
//! are merged into it ([`merge`]) before anything else is read.

mod cas;
mod health;
mod merge;
mod mirror;
mod pool;
mod session_ops;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use redis::{Connection, RedisResult};

use crate::auth::Usage;
use crate::runner::clock::now_ms;
use crate::state::{SessionEntry, StateError};

use cas::Write;
use health::{Gate, Health};
use mirror::Mirror;

pub use health::{HealthView, RETRY_INTERVAL};
pub use pool::RedisPool;

/// Optimistic writes tried at most before a change gives up: each retry
/// means another replica changed the same key in between, and changes
/// within one process are already serialised, so a handful of replicas
/// never come near this.
const MAX_CAS_ATTEMPTS: usize = 100;

/// The shortest expiry given to a profile's entry: a replica whose clock
/// runs behind must not write an entry that expires at once.
const MIN_USAGE_TTL_MS: u64 = 60_000;

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
    health: Health,
    mirror: Mutex<Mirror>,
    /// Changes from this process, one at a time: contention is then only
    /// between replicas.
    updates: Mutex<()>,
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
pub type AppliedUsage<T> = Applied<T, BTreeMap<String, Usage>>;

/// An agent's whole shared state: routing state by profile id, sessions by id.
pub type Exported = (BTreeMap<String, Usage>, BTreeMap<String, SessionEntry>);

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
    pub fn new(pool: Arc<RedisPool>, prefix: &str, agent: &str, failure_window_ms: u64) -> Self {
        SharedState {
            inner: Arc::new(Inner {
                pool,
                agent: agent.to_owned(),
                base: format!("{prefix}:{agent}:"),
                failure_window_ms,
                health: Health::new(),
                mirror: Mutex::new(Mirror::default()),
                updates: Mutex::new(()),
            }),
        }
    }

    fn mirror(&self) -> MutexGuard<'_, Mirror> {
        self.inner.mirror.lock().unwrap_or_else(|e| e.into_inner())
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
        SharedStatus {
            url: self.url().to_owned(),
            health: self.inner.health.view(),
            pending: self.mirror().pending(),
        }
    }

    /// Runs `op` on Redis, or `None` when it is down (the caller uses the
    /// local copy). A caller due to probe a down Redis reconciles first.
    fn call<T>(&self, op: impl FnOnce(&mut Connection) -> RedisResult<T>) -> Option<T> {
        let gate = self.inner.health.gate();
        if gate == Gate::Skip {
            return None;
        }
        let mut connection = match self.inner.pool.get() {
            Ok(connection) => connection,
            Err(error) => {
                self.failed(error);
                return None;
            }
        };
        if gate == Gate::Probe {
            match self.reconcile(&mut connection) {
                Ok(reconciled) => tracing::warn!(
                    store = %self.url(),
                    agent = %self.inner.agent,
                    reconciled,
                    "state store reachable again; local changes merged into it"
                ),
                Err(error) => {
                    self.failed(error.to_string());
                    return None;
                }
            }
        }
        match op(&mut connection) {
            Ok(value) => Some(value),
            Err(error) => {
                self.failed(error.to_string());
                None
            }
        }
    }

    fn failed(&self, error: String) {
        // The client's messages name hosts and system errors, never the
        // URL's password; hide it anyway should one ever quote the URL.
        let error = self.inner.pool.hide(&error);
        self.inner.pool.discard_all();
        if self.inner.health.failed(error.clone()) {
            tracing::warn!(
                store = %self.url(),
                agent = %self.inner.agent,
                %error,
                "state store unreachable; serving from this replica's local copy until it returns"
            );
        }
    }

    /// Merges every local change into Redis, then marks it up — all under
    /// the copy's lock, so a change made meanwhile is either merged or
    /// sees Redis up and goes there.
    fn reconcile(&self, connection: &mut Connection) -> RedisResult<usize> {
        let mut mirror = self.mirror();
        let dirty: Vec<String> = mirror.dirty_usage.iter().cloned().collect();
        for id in &dirty {
            let local = mirror.usage.get(id).cloned();
            let merged = self.merge_into_redis(connection, id, local.as_ref())?;
            mirror.dirty_usage.remove(id);
            mirror.saw_usage(id, merged.as_ref());
        }
        let sessions = self.reconcile_sessions(connection, &mut mirror)?;
        self.inner.health.recovered();
        Ok(dirty.len() + sessions)
    }

    /// Writes `local` merged with Redis's value of profile `id` (a local
    /// removal removes it); returns what Redis then holds.
    fn merge_into_redis(
        &self,
        connection: &mut Connection,
        id: &str,
        local: Option<&Usage>,
    ) -> RedisResult<Option<Usage>> {
        let key = self.usage_key(id);
        for _ in 0..MAX_CAS_ATTEMPTS {
            let raw = cas::read(connection, std::slice::from_ref(&key))?
                .pop()
                .flatten();
            // A value that does not parse is replaced by the local one.
            let remote = raw.as_deref().and_then(|r| serde_json::from_str(r).ok());
            let merged = match (local, &remote) {
                (None, _) => None,
                (Some(local), Some(remote)) => Some(merge::merge_usage(remote, local)),
                (Some(local), None) => Some(local.clone()),
            };
            if raw.is_some() && merged.is_some() && merged == remote {
                return Ok(merged);
            }
            let write = self.usage_write(id, raw, merged.as_ref());
            if cas::compare_and_set(connection, &[write])? {
                return Ok(merged);
            }
        }
        Err(contended())
    }

    fn usage_write(&self, id: &str, expected: Option<String>, value: Option<&Usage>) -> Write {
        let ttl_ms = value.map_or(0, |usage| {
            merge::usage_ttl_ms(
                usage,
                self.inner.failure_window_ms,
                now_ms(),
                MIN_USAGE_TTL_MS,
            )
        });
        Write {
            key: self.usage_key(id),
            expected,
            value: value.map(|usage| serde_json::to_string(usage).unwrap_or_default()),
            ttl_ms,
        }
    }

    /// The routing state of profiles `ids` (those that have any).
    pub fn usage(&self, ids: &[String]) -> Result<BTreeMap<String, Usage>, StateError> {
        let keys: Vec<String> = ids.iter().map(|id| self.usage_key(id)).collect();
        let Some(raws) = self.call(|c| cas::read(c, &keys)) else {
            let mirror = self.mirror();
            return Ok(ids
                .iter()
                .filter_map(|id| Some((id.clone(), mirror.usage.get(id)?.clone())))
                .collect());
        };
        let found = self.parse_usage(ids, &raws)?;
        let mut mirror = self.mirror();
        for id in ids {
            mirror.saw_usage(id, found.get(id));
        }
        Ok(found)
    }

    fn parse_usage(
        &self,
        ids: &[String],
        raws: &[Option<String>],
    ) -> Result<BTreeMap<String, Usage>, StateError> {
        let mut found = BTreeMap::new();
        for (id, raw) in ids.iter().zip(raws) {
            if let Some(raw) = raw {
                let usage =
                    serde_json::from_str(raw).map_err(|e| self.corrupt(&self.usage_key(id), &e))?;
                found.insert(id.clone(), usage);
            }
        }
        Ok(found)
    }

    fn corrupt(&self, key: &str, error: &serde_json::Error) -> StateError {
        StateError::Store {
            store: format!("{} key {key}", self.url()),
            message: format!(
                "not a value this build reads (at column {}); it was left as it is",
                error.column()
            ),
        }
    }

    /// Changes the routing state of profiles `ids` atomically across
    /// replicas: `change` gets their current values (those that have any)
    /// and may be called again if another replica changed one meanwhile.
    /// While Redis is down, the change applies to the local copy.
    pub fn update_usage<T>(
        &self,
        ids: &[String],
        mut change: impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Result<AppliedUsage<T>, StateError> {
        let _serial = self.inner.updates.lock().unwrap_or_else(|e| e.into_inner());
        let mut ids = ids.to_vec();
        let mut attempts = 0;
        while attempts < MAX_CAS_ATTEMPTS {
            attempts += 1;
            let keys: Vec<String> = ids.iter().map(|id| self.usage_key(id)).collect();
            let Some(raws) = self.call(|c| cas::read(c, &keys)) else {
                match self.update_usage_locally(&ids, &mut change) {
                    Some(applied) => return applied,
                    None => continue,
                }
            };
            let before = self.parse_usage(&ids, &raws)?;
            let mut after = before.clone();
            let result = change(&mut after)?;
            let added: Vec<String> = after
                .keys()
                .filter(|id| !ids.contains(id))
                .cloned()
                .collect();
            if !added.is_empty() {
                // Ids it was not asked about: read them too, then decide again.
                ids.extend(added);
                continue;
            }
            let writes: Vec<Write> = ids
                .iter()
                .zip(raws)
                .filter(|(id, _)| before.get(*id) != after.get(*id))
                .map(|(id, raw)| self.usage_write(id, raw, after.get(id)))
                .collect();
            match self.call(|c| cas::compare_and_set(c, &writes)) {
                Some(true) => {
                    let mut mirror = self.mirror();
                    for id in &ids {
                        mirror.saw_usage(id, after.get(id));
                    }
                    return Ok(Applied {
                        result,
                        before,
                        after,
                    });
                }
                Some(false) => {}
                // Whether it was applied is unknown: apply it locally too;
                // the merge rule counts nothing twice.
                None => {
                    if let Some(applied) = self.update_usage_locally(&ids, &mut change) {
                        return applied;
                    }
                }
            }
        }
        Err(StateError::Store {
            store: self.url().to_owned(),
            message: contended().to_string(),
        })
    }

    /// `change` on the local copy, marked for reconciliation; `None` when
    /// Redis came back meanwhile (go there instead).
    fn update_usage_locally<T>(
        &self,
        ids: &[String],
        change: &mut impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Option<Result<AppliedUsage<T>, StateError>> {
        let mut mirror = self.mirror();
        if self.inner.health.is_up() {
            return None;
        }
        let before: BTreeMap<String, Usage> = ids
            .iter()
            .filter_map(|id| Some((id.clone(), mirror.usage.get(id)?.clone())))
            .collect();
        let mut after = before.clone();
        let result = match change(&mut after) {
            Ok(result) => result,
            Err(error) => return Some(Err(error)),
        };
        let touched: Vec<String> = before.keys().chain(after.keys()).cloned().collect();
        for id in touched {
            if before.get(&id) == after.get(&id) {
                continue;
            }
            match after.get(&id) {
                Some(usage) => mirror.usage.insert(id.clone(), usage.clone()),
                None => mirror.usage.remove(&id),
            };
            mirror.dirty_usage.insert(id);
        }
        Some(Ok(Applied {
            result,
            before,
            after,
        }))
    }

    /// Every profile's routing state and every session, straight from
    /// Redis (no local copy): what `failover state migrate` moves.
    pub fn export(&self) -> Result<Exported, StateError> {
        let mut connection = self.strict_connection()?;
        let usage_ids = self.ids_under(&mut connection, "usage:")?;
        let raws = cas::read(
            &mut connection,
            &usage_ids
                .iter()
                .map(|id| self.usage_key(id))
                .collect::<Vec<_>>(),
        )
        .map_err(|e| self.store_error(e))?;
        let usage = self.parse_usage(&usage_ids, &raws)?;
        let sessions = self.export_sessions(&mut connection)?;
        Ok((usage, sessions))
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

    /// A connection now, or the error (no local copy to fall back to).
    fn strict_connection(&self) -> Result<pool::Pooled<'_>, StateError> {
        self.inner.pool.get().map_err(|message| StateError::Store {
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
}

/// The error of a change that lost the race too often.
fn contended() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Client,
        "other replicas kept changing the same state",
        format!("the change was retried {MAX_CAS_ATTEMPTS} times and not applied"),
    ))
}
