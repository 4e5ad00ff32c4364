//! Pooled Redis connections, each bounded by the configured timeout.

use std::time::Duration;

use std::sync::{Mutex, MutexGuard};

use redis::{Connection, ConnectionLike};

use crate::config::state::redact_url;
use crate::config::RedisConfig;
use crate::state::StateError;

/// Idle connections kept at most: a gateway's state calls are a few short
/// round trips per request, so a handful serve thousands of requests a
/// second; more would only hold sockets open on the server.
const MAX_IDLE: usize = 16;

/// Connections to one Redis server, each bounded by the configured timeout.
///
/// A small pool of its own rather than r2d2's: when Redis fails, every idle
/// connection is dropped at once (`discard_all`). After a
/// restart they are all dead, and a pool that found that out one checkout
/// at a time would fail one probe per dead connection before Redis is used
/// again.
pub struct RedisPool {
    client: redis::Client,
    timeout: Duration,
    idle: Mutex<Idle>,
    /// The URL with its password hidden, for messages.
    shown: String,
    /// The URL's password, hidden from every message shown.
    password: Option<String>,
}

#[derive(Default)]
struct Idle {
    /// Bumped by each discard: a connection checked out before it is not
    /// taken back.
    generation: u64,
    connections: Vec<Connection>,
}

impl std::fmt::Debug for RedisPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPool")
            .field("url", &self.shown)
            .finish()
    }
}

/// A checked-out connection; it goes back to the pool when dropped, if it
/// is still open and the pool was not discarded meanwhile.
pub(super) struct Pooled<'a> {
    pool: &'a RedisPool,
    generation: u64,
    connection: Option<Connection>,
    /// It was idle in the pool (it may have died there), not new.
    reused: bool,
}

impl Pooled<'_> {
    /// Whether it was idle in the pool rather than new.
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// Closes it instead of giving it back.
    pub(crate) fn discard(mut self) {
        self.connection = None;
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.connection.as_ref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("present until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        if !connection.is_open() {
            return;
        }
        let mut idle = self.pool.idle();
        if idle.generation == self.generation && idle.connections.len() < MAX_IDLE {
            idle.connections.push(connection);
        }
    }
}

impl RedisPool {
    /// A pool to the configured server. Nothing is connected yet: a server
    /// that is down at start is a degraded store, not a failed start.
    pub fn new(config: &RedisConfig) -> Result<RedisPool, StateError> {
        let url = config.effective_url().ok_or_else(|| StateError::Store {
            store: "redis".into(),
            message: format!(
                "no server is given: set state.redis.url, or {}",
                crate::config::state::REDIS_URL_ENV
            ),
        })?;
        crate::config::state::check_url(&url).map_err(|message| StateError::Store {
            store: "redis".into(),
            message,
        })?;
        let shown = redact_url(&url);
        let password = crate::config::state::url_password(&url)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        let client = redis::Client::open(url.as_str()).map_err(|_| StateError::Store {
            store: shown.clone(),
            message: "not a Redis URL this client can use".into(),
        })?;
        Ok(RedisPool {
            client,
            timeout: Duration::from_millis(config.timeout_ms()),
            idle: Mutex::new(Idle::default()),
            shown,
            password,
        })
    }

    /// The server's URL, its password hidden.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// `message` with the URL's password hidden: the client's messages
    /// name hosts and system errors, not the password; this is the guard
    /// should one ever quote the URL.
    pub fn hide(&self, message: &str) -> String {
        match &self.password {
            Some(password) => message.replace(password.as_str(), "***"),
            None => message.to_owned(),
        }
    }

    fn idle(&self) -> MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection (unless `fresh`), or a new one (connected within
    /// the timeout, its reads and writes bounded by it); or why there is
    /// none.
    pub(super) fn get(&self, fresh: bool) -> Result<Pooled<'_>, String> {
        let (generation, idle) = {
            let mut idle = self.idle();
            let connection = if fresh { None } else { idle.connections.pop() };
            (idle.generation, connection)
        };
        let reused = idle.is_some();
        let connection = match idle {
            Some(connection) => connection,
            None => self.connect().map_err(|e| self.hide(&e.to_string()))?,
        };
        Ok(Pooled {
            pool: self,
            generation,
            connection: Some(connection),
            reused,
        })
    }

    fn connect(&self) -> redis::RedisResult<Connection> {
        let connection = self.client.get_connection_with_timeout(self.timeout)?;
        connection.set_read_timeout(Some(self.timeout))?;
        connection.set_write_timeout(Some(self.timeout))?;
        Ok(connection)
    }

    /// Drops every idle connection, and every one checked out now when it
    /// comes back: after a failure none of them is to be trusted.
    pub(super) fn discard_all(&self) {
        let mut idle = self.idle();
        idle.generation += 1;
        idle.connections.clear();
    }
}
