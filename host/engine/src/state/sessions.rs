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
use super::shared::SharedState;
use super::watch::StateWatch;
use crate::auth::{PinSource, RecordedReason};
use policy_types::OverrideSource;

/// A session's model override (F-9.1): who chose which model, and for an
/// automatic fallback where it came from. One value, so that the runner's
/// narrow rollback (F-9.7) is one comparison. The fields keep the session
/// file's names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ModelOverride {
    /// `providerOverride`.
    #[serde(
        rename = "providerOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub provider: Option<String>,
    /// `modelOverride`: the model's name at its provider.
    #[serde(
        rename = "modelOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub model: Option<String>,
    /// `modelOverrideSource`: who wrote it; none on legacy entries.
    #[serde(
        rename = "modelOverrideSource",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<OverrideSource>,
    /// The provider an auto override fell back from (F-3.3).
    #[serde(
        rename = "modelOverrideFallbackOriginProvider",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_provider: Option<String>,
    /// The model an auto override fell back from.
    #[serde(
        rename = "modelOverrideFallbackOriginModel",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub origin_model: Option<String>,
    /// Why the run fell back, for `/status` (F-9.5).
    #[serde(
        rename = "modelOverrideFallbackReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub reason: Option<RecordedReason>,
    /// When the session last tried its configured primary while on an auto
    /// override: the fallback itself, then each re-probe (F-12.2).
    #[serde(
        rename = "modelOverridePrimaryProbeAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub primary_probe_at: Option<u64>,
}

impl ModelOverride {
    /// The overridden model as `provider/model`.
    pub fn full_name(&self) -> Option<String> {
        match (&self.provider, &self.model) {
            (Some(provider), Some(model)) => Some(format!("{provider}/{model}")),
            (None, Some(model)) => Some(model.clone()),
            _ => None,
        }
    }

    /// The auto override's origin as `provider/model`.
    pub fn origin(&self) -> Option<String> {
        match (&self.origin_provider, &self.origin_model) {
            (Some(provider), Some(model)) => Some(format!("{provider}/{model}")),
            _ => None,
        }
    }

    /// Whether it is the runner's automatic override onto `model`.
    pub fn is_auto_on(&self, model: &str) -> bool {
        self.source == Some(OverrideSource::Auto) && self.full_name().as_deref() == Some(model)
    }
}

/// The auth profile pinned to a session (F-4.4 … F-4.6). The fields keep
/// the session file's names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProfilePin {
    /// `authProfileOverride`.
    #[serde(
        rename = "authProfileOverride",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub profile: Option<String>,
    /// `authProfileOverrideSource`: who pinned it.
    #[serde(
        rename = "authProfileOverrideSource",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub source: Option<PinSource>,
    /// The compaction count when it was pinned.
    #[serde(
        rename = "authProfileOverrideCompactionCount",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub compaction_count: Option<u32>,
    /// The session started over since its profile was pinned: the next run
    /// moves to the profile after the pinned one (F-4.4).
    #[serde(
        rename = "authProfileOverrideSessionReset",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub session_reset: bool,
}

/// The fields of a session entry the runner owns.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// The model override.
    #[serde(flatten)]
    pub model_override: ModelOverride,
    /// The pinned profile.
    #[serde(flatten)]
    pub profile_pin: ProfilePin,
    /// A user changed the model (`/model`, `sessions.patch`): the live run
    /// should switch (F-9.2). Only user-driven changes set it; fallback
    /// rotation, heartbeats and compaction never do. The runtime clears it
    /// when it has switched.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub live_switch_pending: bool,
    /// Fields the runner does not own, kept as they are.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl SessionEntry {
    /// The overridden model as `provider/model`.
    pub fn model(&self) -> Option<String> {
        self.model_override.full_name()
    }

    /// The auto override's origin as `provider/model`.
    pub fn origin(&self) -> Option<String> {
        self.model_override.origin()
    }

    /// Clears the model override (`/new`, `/reset`, `sessions.reset`).
    pub fn clear_model_override(&mut self) {
        self.model_override = ModelOverride::default();
    }

    /// Starts the session over (`/new`, `/reset`, F-9.4): the model
    /// override goes, a user's profile pin goes (F-4.5), and an automatic pin
    /// is kept only so the next run can move to the profile after it (F-4.4).
    pub fn reset(&mut self) {
        self.clear_model_override();
        let pin = &mut self.profile_pin;
        if pin.source == Some(PinSource::User) {
            pin.profile = None;
            pin.source = None;
        }
        pin.compaction_count = None;
        pin.session_reset = pin.profile.is_some();
    }
}

/// Splits `provider/model`.
pub fn split_model(model: &str) -> (&str, &str) {
    model.split_once('/').unwrap_or(("", model))
}

/// The `sessions.json` format version this build reads and writes.
pub const SESSIONS_VERSION: u64 = 1;

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
    pub fn in_memory() -> SessionStore {
        SessionStore {
            path: PathBuf::from("<memory>"),
            lock: PathBuf::from("<memory>"),
            memory: Some(Arc::new(Mutex::new(SessionsFile::default()))),
            shared: None,
            watch: None,
        }
    }

    /// The same store with the sessions in Redis.
    pub fn with_shared(mut self, shared: SharedState) -> SessionStore {
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
pub fn check_session_id(id: &str) -> Result<(), StateError> {
    if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
        return Err(StateError::Refused(format!(
            "session id {id:?} must be 1 to 256 printable characters"
        )));
    }
    Ok(())
}
