//! Compiled policy modules kept on disk between processes.
//!
//! Compiling the default policy with Cranelift takes ~0.35 s of CPU, and
//! every `failover` command that decides anything pays it: for
//! `failover classify` over a file of 100,000 errors it is a third of the
//! run. Compiled code depends only on the module's bytes and on the engine
//! (wasmtime's version and configuration, the CPU features), so it is kept
//! in a cache directory under a name made of both, and loaded instead of
//! compiled when it is there.
//!
//! Loading compiled code runs it, so a cache entry is only trusted when:
//!
//! - the directory and the entry are the user's own and no one else can
//!   write them (the directory is made 0700, entries 0600; a directory or
//!   entry that others can write or that belongs to someone else is not
//!   used);
//! - its content hashes to the SHA-256 written at its start (a torn or
//!   corrupted file is recompiled, never run; this detects damage, it does
//!   not authenticate: whoever can write as this user can replace the
//!   entry, as they could the `failover` binary itself);
//! - wasmtime accepts it for this engine (it checks its own version and
//!   settings and refuses an artifact built for another).
//!
//! Every failure falls back to compiling: the cache can only save time.
//! Entries are written atomically (temporary file, fsync, rename), mode
//! 0600; an entry unused for [`STALE_AFTER`] is removed when another is
//! written.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

/// Bytes of the SHA-256 that starts every entry.
const DIGEST_LEN: usize = 32;

/// What cache entries end with; nothing else in the directory is touched.
const EXTENSION: &str = "cwasm";

/// An entry not written or used for this long belongs to a build or module
/// no longer run (each build of failover embeds its own default policy);
/// removed so the cache does not grow with every upgrade.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// A directory of compiled modules.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CompileCache { dir: dir.into() }
    }

    /// The directory entries live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The module `bytes` (whose SHA-256, lowercase hex, is `sha256`)
    /// compiled for `engine`: from the cache when a sound entry is there,
    /// else compiled and (best effort) stored.
    pub(crate) fn component(
        &self,
        engine: &wasmtime::Engine,
        bytes: &[u8],
        sha256: &str,
    ) -> wasmtime::Result<Component> {
        let path = self.entry_path(engine, sha256);
        if let Some(component) = self.load(engine, &path) {
            return Ok(component);
        }
        let component = Component::new(engine, bytes)?;
        if let Ok(compiled) = component.serialize() {
            // A cache that cannot be written (read-only home, full disk)
            // costs the next process a compile, nothing more.
            let _ = self.store(&path, &compiled);
        }
        Ok(component)
    }

    /// `<sha256 of the module>-<engine hash>.cwasm`.
    fn entry_path(&self, engine: &wasmtime::Engine, module: &str) -> PathBuf {
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        self.dir
            .join(format!("{module}-{:016x}.{EXTENSION}", hasher.finish()))
    }

    fn load(&self, engine: &wasmtime::Engine, path: &Path) -> Option<Component> {
        if !trusted_dir(&self.dir) {
            return None;
        }
        let mut opened = fs::File::open(path).ok()?;
        // The entry itself, as opened (not as named): ours, and only ours
        // to write.
        let meta = opened.metadata().ok()?;
        if !owned_by_me(&meta) {
            return None;
        }
        let mut file = Vec::new();
        std::io::Read::read_to_end(&mut opened, &mut file).ok()?;
        let (digest, compiled) = file.split_at_checked(DIGEST_LEN)?;
        if Sha256::digest(compiled).as_slice() != digest {
            return None;
        }
        // SAFETY: `compiled` is what `Component::serialize` wrote for a
        // module with these bytes, read back unchanged (its digest matches)
        // from a directory only this user can write; wasmtime itself
        // refuses an artifact made by another version or configuration.
        let component = unsafe { Component::deserialize(engine, compiled) }.ok()?;
        mark_used(&opened, &meta);
        Some(component)
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        create_private_dir(&self.dir)?;
        if !trusted_dir(&self.dir) {
            return Ok(());
        }
        // tempfile creates the file with mode 0600.
        let mut temp = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempfile_in(&self.dir)?;
        temp.write_all(&Sha256::digest(compiled))?;
        temp.write_all(compiled)?;
        temp.as_file().sync_all()?;
        temp.persist(path).map_err(|e| e.error)?;
        self.remove_stale(path);
        Ok(())
    }

    /// Removes entries (and killed writes' temporary files) older than
    /// [`STALE_AFTER`], except `keep`.
    fn remove_stale(&self, keep: &Path) {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let path = entry.path();
            let ours = path.extension().is_some_and(|e| e == EXTENSION)
                || entry.file_name().to_string_lossy().starts_with(".tmp-");
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| now.duration_since(at).ok())
                .is_some_and(|age| age > STALE_AFTER);
            if ours && old && path != keep {
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// How stale a used entry's time may get before a use renews it: renewing
/// on every use would cost a write per process start.
const RENEW_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Renews the modification time of an entry (opened, with its `meta`),
/// which [`CompileCache::remove_stale`] reads as its last use.
fn mark_used(entry: &fs::File, meta: &fs::Metadata) {
    let stale = meta
        .modified()
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|age| age > RENEW_AFTER);
    if stale {
        let _ = entry.set_modified(SystemTime::now());
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs::create_dir_all(dir)
}

/// Whether only this user can put files in `dir`.
fn trusted_dir(dir: &Path) -> bool {
    fs::metadata(dir).is_ok_and(|meta| meta.is_dir() && owned_by_me(&meta))
}

/// Whether this user owns the file and no one else may write it.
#[cfg(unix)]
fn owned_by_me(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    meta.uid() == me && meta.mode() & 0o022 == 0
}

#[cfg(not(unix))]
fn owned_by_me(_meta: &fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> wasmtime::Engine {
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        wasmtime::Engine::new(&config).unwrap()
    }

    fn entries(dir: &Path) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
            .collect()
    }

    #[test]
    fn a_compiled_module_is_stored_and_loaded_back() {
        let temp = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(temp.path().join("compiled"));
        let engine = engine();
        let bytes = empty_component();
        cache.component(&engine, &bytes, EMPTY_SHA256).unwrap();
        let stored = entries(cache.dir());
        assert_eq!(stored.len(), 1);
        assert!(cache.load(&engine, &stored[0]).is_some());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(cache.dir()), 0o700);
            assert_eq!(mode(&stored[0]), 0o600);
        }
    }

    /// A cache in a fresh directory holding the empty component's entry,
    /// and that entry's path.
    fn cache_with_entry() -> (tempfile::TempDir, CompileCache, wasmtime::Engine, PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(temp.path());
        let engine = engine();
        cache
            .component(&engine, &empty_component(), EMPTY_SHA256)
            .unwrap();
        let path = entries(cache.dir()).remove(0);
        (temp, cache, engine, path)
    }

    #[test]
    fn a_corrupted_entry_is_compiled_again_not_run() {
        let (_temp, cache, engine, path) = cache_with_entry();
        let mut file = fs::read(&path).unwrap();
        let last = file.len() - 1;
        file[last] ^= 0xff;
        fs::write(&path, &file).unwrap();
        assert!(
            cache.load(&engine, &path).is_none(),
            "digest must not match"
        );
        // Compiling again replaces the bad entry.
        cache
            .component(&engine, &empty_component(), EMPTY_SHA256)
            .unwrap();
        assert!(cache.load(&engine, &path).is_some());
        // A file too short to hold a digest is no entry either.
        fs::write(&path, b"short").unwrap();
        assert!(cache.load(&engine, &path).is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_directory_others_can_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let (temp, cache, engine, path) = cache_with_entry();
        fs::set_permissions(temp.path(), fs::Permissions::from_mode(0o777)).unwrap();
        assert!(cache.load(&engine, &path).is_none());
    }

    #[test]
    fn a_use_renews_an_entry_last_used_long_ago() {
        let (_temp, cache, engine, path) = cache_with_entry();
        let long_ago = SystemTime::now() - RENEW_AFTER - Duration::from_secs(60);
        fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert!(cache.load(&engine, &path).is_some());
        let age = fs::metadata(&path)
            .unwrap()
            .modified()
            .unwrap()
            .elapsed()
            .unwrap();
        assert!(age < RENEW_AFTER, "not renewed: {age:?} old");
    }

    #[test]
    fn entries_long_unused_are_removed_when_another_is_written() {
        let temp = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(temp.path());
        let old = temp.path().join(format!("old.{EXTENSION}"));
        let recent = temp.path().join(format!("recent.{EXTENSION}"));
        let other = temp.path().join("notes.txt");
        for path in [&old, &recent, &other] {
            fs::write(path, b"x").unwrap();
        }
        let long_ago = SystemTime::now() - STALE_AFTER - Duration::from_secs(60);
        for path in [&old, &other] {
            let file = fs::File::options().write(true).open(path).unwrap();
            file.set_modified(long_ago).unwrap();
        }
        cache
            .component(&engine(), &empty_component(), EMPTY_SHA256)
            .unwrap();
        assert!(!old.exists());
        assert!(recent.exists());
        assert!(other.exists(), "only cache entries are removed");
    }

    /// A name for the empty component's entry (the cache takes the digest
    /// as given).
    const EMPTY_SHA256: &str = "empty";

    /// The smallest component: the preamble alone (`\0asm`, version 0x0d,
    /// layer 1). It compiles and serialises like any other.
    fn empty_component() -> Vec<u8> {
        vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00]
    }
}
