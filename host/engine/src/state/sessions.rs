//! The session store: each session's model and profile overrides (spec §9).
//!
//! `<state>/agents/<agent>/sessions/sessions.json`:
//!
//! ```json
//! {"version": 1, "sessions": {"chat-42": {
//!   "providerOverride": "openai", "modelOverride": "gpt-4o", "modelOverrideSource": "auto",
//!   "modelOverrideFallbackOriginProvider": "anthropic",
//!   "modelOverrideFallbackOriginModel": "claude-sonnet-4",
//!   "modelOverrideFallbackReason": "rate_limit",
//!   "authProfileOverride": "openai:work", "authProfileOverrideSource": "auto",
//!   "authProfileOverrideCompactionCount": 3}}}
//! ```
//!
//! The runner owns only these fields (F-9.1); anything else an entry holds
//! belongs to the embedding runtime and is kept as it is. Every change is a
//! locked, re-read, atomic rewrite like the auth state files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::StateError;
use super::files::{self, StateLock};
use super::session::SessionEntry;
use super::shared::SharedState;
use super::watch::StateWatch;

/// The `sessions.json` format version this build reads and writes.
pub(crate) const SESSIONS_VERSION: u64 = 1;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SessionsFile {
    #[serde(default)]
    version: u64,
    #[serde(default)]
    sessions: BTreeMap<String, SessionEntry>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

/// One agent's sessions — in `sessions.json`, in Redis, or, for replay,
/// in memory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    path: PathBuf,
    lock: PathBuf,
    memory: Option<Arc<Mutex<SessionsFile>>>,
    /// Sessions kept in Redis instead of `sessions.json`.
    shared: Option<SharedState>,
    /// Told what sessions are read and written (a recording, F-12.4).
    watch: Option<Arc<dyn StateWatch>>,
}

impl SessionStore {
    /// The store of the agent whose state lives in `agent_dir`
    /// (`<state>/agents/<agent>/agent`).
    pub fn for_agent(agent_dir: &Path) -> SessionStore {
        let dir = agent_dir.parent().unwrap_or(agent_dir).join("sessions");
        SessionStore {
            path: dir.join("sessions.json"),
            lock: dir.join(".lock"),
            memory: None,
            shared: None,
            watch: None,
        }
    }

    /// A store that keeps the sessions in memory (replay's scratch state).
    pub(crate) fn in_memory() -> SessionStore {
        SessionStore {
            path: PathBuf::from("<memory>"),
            lock: PathBuf::from("<memory>"),
            memory: Some(Arc::new(Mutex::new(SessionsFile::default()))),
            shared: None,
            watch: None,
        }
    }

    /// The same store with the sessions in Redis.
    pub(crate) fn with_shared(mut self, shared: SharedState) -> SessionStore {
        self.shared = Some(shared);
        self
    }

    /// The same store, telling `watch` every session it reads and every one
    /// this process writes.
    pub fn with_watch(mut self, watch: Arc<dyn StateWatch>) -> SessionStore {
        self.watch = Some(watch);
        self
    }

    /// The sessions file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<SessionsFile, StateError> {
        if let Some(memory) = &self.memory {
            return Ok(memory.lock().unwrap_or_else(|e| e.into_inner()).clone());
        }
        let file = files::read_json::<SessionsFile>(&self.path)?.unwrap_or_default();
        if file.version > SESSIONS_VERSION {
            // Writing it back in this build's format would lose what the
            // newer one keeps: refuse, as the auth files do.
            return Err(StateError::Invalid {
                path: self.path.clone(),
                message: format!(
                    "version {} is newer than this build understands ({SESSIONS_VERSION})",
                    file.version
                ),
            });
        }
        Ok(file)
    }

    /// Every session.
    pub fn all(&self) -> Result<BTreeMap<String, SessionEntry>, StateError> {
        if let Some(shared) = &self.shared {
            return Ok(shared.sessions());
        }
        Ok(self.read()?.sessions)
    }

    /// One session (empty if it has never been written).
    pub fn get(&self, id: &str) -> Result<SessionEntry, StateError> {
        let entry = match (&self.shared, &self.memory) {
            (Some(shared), _) => shared.session(id),
            // One entry, not a copy of every session.
            (None, Some(memory)) => memory
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .sessions
                .get(id)
                .cloned(),
            (None, None) => self.read()?.sessions.remove(id),
        };
        if let (Some(watch), Some(entry)) = (&self.watch, &entry) {
            watch.session_seen(id, entry);
        }
        Ok(entry.unwrap_or_default())
    }

    /// Changes one session under the lock: re-read, change, atomic write.
    /// A change that changes nothing writes nothing (every served request
    /// of a session passes through here; an fsync each would be its cost).
    /// With Redis, atomic across replicas: `change` may be called again
    /// when another replica changed the session meanwhile.
    pub fn update<T>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut SessionEntry) -> T,
    ) -> Result<T, StateError> {
        check_session_id(id)?;
        if let Some(shared) = &self.shared {
            let applied = super::blocking::off_async(|| shared.update_session(id, &mut change))?;
            if let Some(watch) = &self.watch {
                if let Some(before) = &applied.before {
                    watch.session_seen(id, before);
                }
                if let Some(after) = &applied.after {
                    watch.session_written(id, after);
                }
            }
            return Ok(applied.result);
        }
        if let Some(memory) = &self.memory {
            let mut file = memory.lock().unwrap_or_else(|e| e.into_inner());
            return Ok(change(file.sessions.entry(id.to_owned()).or_default()));
        }
        let _lock = StateLock::acquire(&self.lock)?;
        let mut file = self.read()?;
        let before = file.sessions.get(id).cloned();
        if let (Some(watch), Some(before)) = (&self.watch, &before) {
            watch.session_seen(id, before);
        }
        let entry = file.sessions.entry(id.to_owned()).or_default();
        let result = change(entry);
        if before.as_ref().unwrap_or(&SessionEntry::default()) == entry {
            if before.is_none() {
                file.sessions.remove(id);
            }
            return Ok(result);
        }
        let written = entry.clone();
        file.version = SESSIONS_VERSION;
        files::write_json_atomic(&self.path, &file)?;
        if let Some(watch) = &self.watch {
            watch.session_written(id, &written);
        }
        Ok(result)
    }
}

impl SessionStore {
    /// Writes `sessions` over the entries of the same ids, in one locked
    /// write (a migration's).
    pub fn import(&self, sessions: &BTreeMap<String, SessionEntry>) -> Result<(), StateError> {
        for id in sessions.keys() {
            check_session_id(id)?;
        }
        if let Some(shared) = &self.shared {
            return shared.import(&BTreeMap::new(), sessions);
        }
        if let Some(memory) = &self.memory {
            let mut file = memory.lock().unwrap_or_else(|e| e.into_inner());
            file.sessions.extend(sessions.clone());
            return Ok(());
        }
        let _lock = StateLock::acquire(&self.lock)?;
        let mut file = self.read()?;
        file.sessions.extend(sessions.clone());
        file.version = SESSIONS_VERSION;
        files::write_json_atomic(&self.path, &file)
    }
}

/// Session ids are 1 to 256 printable characters.
pub(crate) fn check_session_id(id: &str) -> Result<(), StateError> {
    if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
        return Err(StateError::Refused(format!(
            "session id {id:?} must be 1 to 256 printable characters"
        )));
    }
    Ok(())
}
