//! Reading an agent's store: its profiles (and their summaries, and one
//! profile's credential) and its routing state, through the parsed-file
//! cache the store's clones share.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::AuthStore;
use crate::auth::Usage;
use crate::state::dir_watch::DirWatch;
use crate::state::error::StateError;
use crate::state::read_cache::ReadCache;
use crate::state::secrets::{Credential, ProfileSummary, ProfilesFile};
use crate::state::usage_file::UsageFile;
use crate::state::watch::report_usage_seen;

/// Parsed files, shared by the store's clones.
#[derive(Debug, Default)]
pub(super) struct Cached {
    /// One entry for the file and its summaries: one check of the file
    /// answers for both within a run (see `read_scope`).
    pub(super) profiles: ReadCache<ParsedProfiles>,
    pub(super) usage: ReadCache<UsageFile>,
    /// The watch on the agent's directory, made on the first read once
    /// the directory exists (`None` where it cannot be watched).
    dir_watch: OnceLock<Option<DirWatch>>,
}

/// `auth-profiles.json` as parsed, with its summaries made on first use
/// (their fingerprints hash every secret).
#[derive(Debug, Clone)]
pub(super) struct ParsedProfiles {
    file: ProfilesFile,
    summaries: std::sync::OnceLock<Arc<[ProfileSummary]>>,
}

impl ParsedProfiles {
    pub(super) fn read(path: &std::path::Path) -> Result<Option<ParsedProfiles>, StateError> {
        Ok(ProfilesFile::read(path)?.map(|file| ParsedProfiles {
            file,
            summaries: std::sync::OnceLock::new(),
        }))
    }

    /// Shared, so that a reader holds them without the cache's lock.
    fn summaries(&self) -> Arc<[ProfileSummary]> {
        self.summaries
            .get_or_init(|| self.file.summaries().into())
            .clone()
    }
}

impl AuthStore {
    /// The watch on the agent's directory, once the directory exists (see
    /// `state::dir_watch`): until then, and where it cannot be watched,
    /// every read checks its file.
    fn dir_watch(&self) -> Option<&DirWatch> {
        if let Some(watch) = self.cache.dir_watch.get() {
            return watch.as_ref();
        }
        if !self.paths.dir.is_dir() {
            return None;
        }
        let made = self
            .cache
            .dir_watch
            .get_or_init(|| DirWatch::new(&self.paths.dir));
        made.as_ref()
    }

    /// The profiles file as it is now, read past the cache: what a change
    /// under the lock, or a token refresh, must decide on.
    pub(crate) fn profiles_fresh(&self) -> Result<ProfilesFile, StateError> {
        self.profiles_read(false)
    }

    /// The profiles file: the agent's, else the legacy one, else empty.
    pub fn profiles(&self) -> Result<ProfilesFile, StateError> {
        self.profiles_read(true)
    }

    fn profiles_read(&self, cached: bool) -> Result<ProfilesFile, StateError> {
        if let Some(memory) = self.memory() {
            return Ok(memory.profiles.clone());
        }
        let path = &self.paths.profiles;
        let file = if cached {
            let copy = |parsed: &ParsedProfiles| parsed.file.clone();
            self.cache
                .profiles
                .with(path, self.dir_watch(), ParsedProfiles::read, copy)?
        } else {
            ProfilesFile::read(path)?
        };
        match file {
            Some(file) => Ok(file),
            None => Ok(ProfilesFile::read(&self.paths.legacy_profiles)?.unwrap_or_default()),
        }
    }

    /// Profile `id`'s credential, secret included, read in place from the
    /// profiles file (as [`AuthStore::profiles`] finds it) rather than from
    /// a copy of every profile.
    pub fn credential(&self, id: &str) -> Result<Option<Credential>, StateError> {
        if let Some(memory) = self.memory() {
            return Ok(memory.profiles.credential(id));
        }
        let path = &self.paths.profiles;
        let found =
            self.cache
                .profiles
                .with(path, self.dir_watch(), ParsedProfiles::read, |parsed| {
                    parsed.file.credential(id)
                })?;
        match found {
            Some(credential) => Ok(credential),
            // No agent file: the legacy one, as `profiles` reads it.
            None => Ok(self.profiles()?.credential(id)),
        }
    }

    /// Profiles without secrets.
    pub fn summaries(&self) -> Result<Vec<ProfileSummary>, StateError> {
        self.with_summaries(<[ProfileSummary]>::to_vec)
    }

    /// `read` of the profiles without secrets, without copying them first
    /// when they are held (in memory, or parsed from an unchanged file).
    pub(crate) fn with_summaries<T>(
        &self,
        read: impl FnOnce(&[ProfileSummary]) -> T,
    ) -> Result<T, StateError> {
        if let Some(mut memory) = self.memory() {
            let memory = &mut *memory;
            let summaries = memory
                .summaries
                .get_or_insert_with(|| memory.profiles.summaries());
            return Ok(read(summaries));
        }
        let path = &self.paths.profiles;
        match self.cache.profiles.with(
            path,
            self.dir_watch(),
            ParsedProfiles::read,
            ParsedProfiles::summaries,
        )? {
            Some(summaries) => Ok(read(&summaries)),
            // No agent file: the legacy one, as `profiles` reads it.
            None => Ok(read(&self.profiles()?.summaries())),
        }
    }

    /// Routing state of every profile. Without `auth-state.json`, the
    /// `usageStats` older versions kept inside `auth-profiles.json`.
    pub fn usage(&self) -> Result<BTreeMap<String, Usage>, StateError> {
        let usage = match &self.shared {
            Some(shared) => shared.usage(&self.profiles()?.ids()),
            None => self.usage_stats()?,
        };
        if let Some(watch) = &self.watch {
            report_usage_seen(watch.as_ref(), &usage);
        }
        Ok(usage)
    }

    /// [`AuthStore::usage`] of the profiles `ids` only (those that have
    /// any): what a candidate's order needs, without copying every other
    /// profile's state on every request. (In Redis every profile is still
    /// read, and only these are returned.)
    pub fn usage_of(&self, ids: &[&str]) -> Result<BTreeMap<String, Usage>, StateError> {
        // Inserted one by one: collecting sorts through a vector first,
        // which for the one or two profiles of a candidate cost more than
        // the map.
        let pick = |all: &BTreeMap<String, Usage>| -> BTreeMap<String, Usage> {
            let mut picked = BTreeMap::new();
            for id in ids {
                if let Some(usage) = all.get(*id) {
                    picked.insert((*id).to_owned(), usage.clone());
                }
            }
            picked
        };
        let usage = if let Some(shared) = &self.shared {
            // Every profile still: reading one is what restores its state
            // in a Redis that came back empty (from this replica's copy).
            pick(&shared.usage(&self.profiles()?.ids()))
        } else if let Some(memory) = self.memory() {
            pick(&memory.usage.usage_stats)
        } else {
            let kept = (self.cache.usage).with(
                &self.paths.usage,
                self.dir_watch(),
                UsageFile::read,
                |file| pick(&file.usage_stats),
            )?;
            match kept {
                Some(usage) => usage,
                None => pick(&self.legacy_usage_stats(true)?),
            }
        };
        if let Some(watch) = &self.watch {
            report_usage_seen(watch.as_ref(), &usage);
        }
        Ok(usage)
    }

    /// The `usageStats` of the routing state file, copied out of the file
    /// held (in memory, or parsed from an unchanged file) without the rest
    /// of it.
    fn usage_stats(&self) -> Result<BTreeMap<String, Usage>, StateError> {
        if let Some(memory) = self.memory() {
            return Ok(memory.usage.usage_stats.clone());
        }
        let kept = (self.cache.usage).with(
            &self.paths.usage,
            self.dir_watch(),
            UsageFile::read,
            |file| file.usage_stats.clone(),
        )?;
        match kept {
            Some(stats) => Ok(stats),
            None => self.legacy_usage_stats(true),
        }
    }

    /// The routing state file as it is now, past the cache (under the lock).
    pub(super) fn usage_file_fresh(&self) -> Result<UsageFile, StateError> {
        if let Some(memory) = self.memory() {
            return Ok(memory.usage.clone());
        }
        if let Some(file) = UsageFile::read(&self.paths.usage)? {
            return Ok(file);
        }
        Ok(UsageFile {
            usage_stats: self.legacy_usage_stats(false)?,
            ..UsageFile::default()
        })
    }

    /// Without `auth-state.json`: the `usageStats` older versions kept
    /// inside `auth-profiles.json` (read through the cache when `cached`).
    fn legacy_usage_stats(&self, cached: bool) -> Result<BTreeMap<String, Usage>, StateError> {
        Ok(self
            .profiles_read(cached)?
            .legacy_usage()
            .unwrap_or_default())
    }
}
