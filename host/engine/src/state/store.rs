//! One agent's auth store: its profiles and their routing state, read and
//! changed safely by any number of processes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::error::StateError;
use super::files::{self, StateLock};
use super::paths::AgentPaths;
use super::secrets::{ProfileSummary, ProfilesFile};
use super::shared::SharedState;
use super::usage_file::UsageFile;
use super::watch::{report_usage_seen, StateWatch};
use crate::auth::Usage;
use crate::names::canonical_provider;
use reads::{Cached, ParsedProfiles};

mod reads;

/// A change of one profile's routing state failed.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError<E> {
    /// The state could not be read or written.
    #[error(transparent)]
    State(#[from] StateError),
    /// The change itself was refused (its error, as it came).
    #[error("{0}")]
    Refused(E),
}

/// An agent's `auth-profiles.json` and `auth-state.json` — or, for replay,
/// the same documents held in memory (`in_memory`), or the
/// profiles in the file and their routing state in Redis
/// (`with_shared`).
#[derive(Debug, Clone)]
pub struct AuthStore {
    paths: AgentPaths,
    memory: Option<Arc<Mutex<Memory>>>,
    /// Routing state kept in Redis instead of `auth-state.json`.
    shared: Option<SharedState>,
    /// Told what routing state is read and written (a recording, F-12.4).
    watch: Option<Arc<dyn StateWatch>>,
    /// The files as last parsed, reused while unchanged.
    cache: Arc<Cached>,
}

/// The in-memory documents.
#[derive(Debug, Default)]
struct Memory {
    profiles: ProfilesFile,
    /// `profiles`' summaries (their fingerprints hash every secret), made
    /// on first use after a change of the profiles: replay reads them for
    /// every candidate of every request.
    summaries: Option<Vec<ProfileSummary>>,
    usage: UsageFile,
}

impl AuthStore {
    /// Opens the store. On first use — when this agent has no
    /// `auth-profiles.json` yet — OAuth credentials in the legacy
    /// `credentials/oauth.json` are imported into it (that file is only
    /// read, never written). Temporary files that killed writes left in
    /// the agent's directories are removed.
    pub fn open(paths: AgentPaths) -> Result<AuthStore, StateError> {
        let store = AuthStore {
            paths,
            memory: None,
            shared: None,
            watch: None,
            cache: Arc::default(),
        };
        // Copies of the state that killed writes left (secrets among them).
        files::remove_stale_temps(&store.paths.dir);
        if let Some(agent) = store.paths.dir.parent() {
            files::remove_stale_temps(&agent.join("sessions"));
        }
        if !store.paths.profiles.exists()
            && !store.paths.legacy_profiles.exists()
            && store.paths.legacy_oauth.exists()
        {
            let _lock = store.lock()?;
            if !store.paths.profiles.exists() {
                let imported = super::legacy_oauth::import(&store.paths.legacy_oauth)?;
                files::write_json_atomic(&store.paths.profiles, imported.document())?;
            }
        }
        Ok(store)
    }

    /// A store that keeps its documents in memory: no files, no locks, no
    /// fsync. Replay runs on one (a scratch state thousands of times faster
    /// than files); `paths` only names it.
    pub(crate) fn in_memory(paths: AgentPaths) -> AuthStore {
        AuthStore {
            paths,
            memory: Some(Arc::new(Mutex::new(Memory::default()))),
            shared: None,
            watch: None,
            cache: Arc::default(),
        }
    }

    /// The same store with its routing state in Redis (the profiles, with
    /// their secrets, stay in the file).
    pub(crate) fn with_shared(mut self, shared: SharedState) -> AuthStore {
        self.shared = Some(shared);
        self
    }

    /// Which backend holds the routing state, and whether it answers.
    pub fn backend_status(&self) -> BackendStatus {
        let backend = match (&self.shared, &self.memory) {
            (Some(_), _) => "redis",
            (None, Some(_)) => "memory",
            (None, None) => "files",
        };
        BackendStatus {
            backend,
            shared: self.shared.as_ref().map(SharedState::status),
        }
    }

    /// The Redis backend, when the routing state lives there.
    pub fn shared(&self) -> Option<&SharedState> {
        self.shared.as_ref()
    }

    /// The same store, telling `watch` every routing state it reads and
    /// every one this process writes.
    pub fn with_watch(mut self, watch: Arc<dyn StateWatch>) -> AuthStore {
        self.watch = Some(watch);
        self
    }

    fn memory(&self) -> Option<std::sync::MutexGuard<'_, Memory>> {
        self.memory
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The files this store uses.
    pub fn paths(&self) -> &AgentPaths {
        &self.paths
    }

    fn lock(&self) -> Result<StateLock, StateError> {
        StateLock::acquire(&self.paths.lock)
    }

    /// Changes the profiles under the lock: re-reads the file, applies
    /// `change`, writes it atomically (mode 0600) to the agent's location.
    /// A file that does not parse is reported and left untouched.
    pub fn update_profiles<T>(
        &self,
        change: impl FnOnce(&mut ProfilesFile) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        if let Some(mut memory) = self.memory() {
            let mut file = memory.profiles.clone();
            let result = change(&mut file)?;
            memory.profiles = file;
            memory.summaries = None;
            return Ok(result);
        }
        let _lock = self.lock()?;
        let mut file = self.profiles_fresh()?;
        let result = change(&mut file)?;
        let path = &self.paths.profiles;
        let written = files::write_json_atomic_kept(path, file.document())?;
        self.cache
            .profiles
            .keep_written(path, written, ParsedProfiles::read);
        Ok(result)
    }

    /// Changes the routing state under the lock (re-read, change, atomic
    /// write). With Redis, atomic across replicas: `change` may be called
    /// again when another replica changed the same state meanwhile.
    pub fn update_usage<T>(
        &self,
        change: impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        self.update_usage_of(None, change)
    }

    /// Forgets profile `id`'s routing state (it was removed or replaced);
    /// returns whether it had any.
    pub fn remove_usage(&self, id: &str) -> Result<bool, StateError> {
        let ids = [id.to_owned()];
        self.update_usage_of(Some(&ids), |usage| Ok(usage.remove(id).is_some()))
    }

    /// [`AuthStore::update_usage`] of the profiles `ids` (`None`: all).
    fn update_usage_of<T>(
        &self,
        ids: Option<&[String]>,
        mut change: impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Result<T, StateError> {
        if let Some(shared) = &self.shared {
            let all;
            let ids = match ids {
                Some(ids) => ids,
                None => {
                    all = self.profiles()?.ids();
                    &all
                }
            };
            let applied = super::blocking::off_async(|| shared.update_usage(ids, &mut change))?;
            self.report_change(&applied.before, None);
            self.report_change(&applied.before, Some(&applied.after));
            return Ok(applied.result);
        }
        if let Some(mut memory) = self.memory() {
            let mut usage = memory.usage.usage_stats.clone();
            self.report_change(&memory.usage.usage_stats, None);
            let result = change(&mut usage)?;
            self.report_change(&memory.usage.usage_stats, Some(&usage));
            memory.usage.usage_stats = usage;
            return Ok(result);
        }
        let _lock = self.lock()?;
        let mut file = self.usage_file_fresh()?;
        let before = self.watch.as_ref().map(|_| file.usage_stats.clone());
        if let Some(before) = &before {
            self.report_change(before, None);
        }
        let result = change(&mut file.usage_stats)?;
        let written = before.as_ref().map(|_| file.usage_stats.clone());
        let kept = files::write_json_atomic_kept(&self.paths.usage, &file.stamped())?;
        // A gateway writes this file every second (`lastUsed`): what it
        // wrote is kept, or every request would read the file again.
        self.cache
            .usage
            .keep_written(&self.paths.usage, kept, UsageFile::read);
        if let (Some(before), Some(written)) = (&before, &written) {
            self.report_change(before, Some(written));
        }
        Ok(result)
    }

    /// Tells the watch the state found under the lock (`after` is `None`),
    /// or the profiles this change wrote.
    fn report_change(
        &self,
        before: &BTreeMap<String, Usage>,
        after: Option<&BTreeMap<String, Usage>>,
    ) {
        let Some(watch) = &self.watch else {
            return;
        };
        match after {
            None => report_usage_seen(watch.as_ref(), before),
            Some(after) => {
                for (profile, usage) in after {
                    if before.get(profile) != Some(usage) {
                        watch.usage_written(profile, usage);
                    }
                }
            }
        }
    }

    /// Changes one profile's routing state under the lock: `next` gets its
    /// current state (default when it has none) and returns the new one,
    /// which is stored and returned. An error from `next` (a policy that
    /// refused to decide) leaves the file untouched and comes back as it is,
    /// [`UpdateError::Refused`] — not as a state error.
    pub fn update_profile_usage<E>(
        &self,
        id: &str,
        mut next: impl FnMut(&Usage) -> Result<Usage, E>,
    ) -> Result<Usage, UpdateError<E>> {
        if let (None, Some(mut memory)) = (&self.shared, self.memory()) {
            // One entry changes: copy it, not every profile's.
            let usage = &mut memory.usage.usage_stats;
            self.report_change(usage, None);
            let stored = usage.get(id);
            let after = next(&stored.cloned().unwrap_or_default()).map_err(UpdateError::Refused)?;
            if let Some(watch) = self.watch.as_ref().filter(|_| stored != Some(&after)) {
                watch.usage_written(id, &after);
            }
            usage.insert(id.to_owned(), after.clone());
            return Ok(after);
        }
        let mut refused = None;
        let ids = [id.to_owned()];
        let updated = self.update_usage_of(Some(&ids), |usage| {
            let before = usage.get(id).cloned().unwrap_or_default();
            match next(&before) {
                Ok(after) => {
                    usage.insert(id.to_owned(), after.clone());
                    Ok(after)
                }
                Err(error) => {
                    refused = Some(error);
                    Err(StateError::Refused("the change was refused".into()))
                }
            }
        });
        match (updated, refused) {
            (_, Some(error)) => Err(UpdateError::Refused(error)),
            (Ok(after), None) => Ok(after),
            (Err(error), None) => Err(UpdateError::State(error)),
        }
    }
}

/// The stored profiles of every provider, as the policy sees them (no
/// secrets), with their routing state.
pub(crate) fn stored_profiles(
    summaries: &[ProfileSummary],
    usage: &BTreeMap<String, Usage>,
) -> Vec<crate::auth::StoredProfile> {
    summaries.iter().map(|s| stored_profile(s, usage)).collect()
}

/// One stored profile as the policy sees it, with its routing state in
/// `usage` (the default state when it has none there).
pub fn stored_profile(
    summary: &ProfileSummary,
    usage: &BTreeMap<String, Usage>,
) -> crate::auth::StoredProfile {
    crate::auth::StoredProfile {
        id: summary.id.clone(),
        provider: canonical_provider(&summary.provider).to_owned(),
        kind: summary.kind,
        expires: summary.expires,
        refreshable: summary.refreshable,
        usage: usage.get(&summary.id).cloned().unwrap_or_default(),
    }
}

/// What `status` says of a store's backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendStatus {
    /// `files`, `redis` or `memory`.
    pub backend: &'static str,
    /// The Redis side, on that backend.
    pub shared: Option<super::shared::SharedStatus>,
}

impl BackendStatus {
    /// Whether the store answers (files always do, as far as it knows).
    pub fn healthy(&self) -> bool {
        self.shared.as_ref().is_none_or(|s| s.health.healthy)
    }
}
