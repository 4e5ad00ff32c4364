//! Parsed state files kept while the file stays the same.
//!
//! A gateway reads `auth-profiles.json` and `auth-state.json` on every
//! request, so that a change another process makes is seen at once. A
//! `stat` tells whether the file changed since it was last parsed: its
//! device, inode, size and modification and change times. Unchanged, the
//! parsed value is reused: one system call instead of an open, a read and
//! a parse.
//!
//! Two versions can share a stamp only if written close together: the
//! filesystem reuses a freed inode number at once, and file times advance
//! by a clock tick (or a second, on some filesystems). So, as git does for
//! its index, a version changed less than [`SETTLE`] ago is never kept: a
//! later version cannot then carry its stamp. Reads that decide a write
//! (under the state lock) do not use this at all.
//!
//! A version this process wrote itself is kept at once
//! ([`ReadCache::keep_written`]), with the written file held open: an inode
//! that is still open is never freed, so its number cannot come back as
//! another file's, and every writer of state files replaces them by rename
//! — a new inode. Without this, a gateway that writes `auth-state.json`
//! every second (`lastUsed`) never had a settled version to keep, and read
//! and parsed the file on every request. What this cannot see is an edit
//! *in place* of the held file (not by rename) within the same clock tick
//! as the write it follows; failover never writes in place, and the next
//! change of the file is seen as usual.
//!
//! Inside a run, a check made since the run began answers for the run's
//! later reads of the same file for a few milliseconds (see
//! [`super::read_scope`]); everywhere else each read checks.
//!
//! Where the file's directory is watched ([`DirWatch`]), the check is a
//! look at the watch's queue, shared by the directory's files: a kept
//! version is stat-ed again only after something in the directory changed.

use std::fs::{File, Metadata};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::dir_watch::{watchable_file, DirWatch, Generation};
use super::error::StateError;
use super::read_scope::answers_for_this_read;

/// How old a version must be before it is kept: more than the coarsest
/// file-time granularity in use (a second) with room to spare.
const SETTLE: Duration = Duration::from_secs(2);

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    device: u64,
    inode: u64,
    len: u64,
    modified_ns: i128,
    changed_ns: i128,
}

impl Stamp {
    #[cfg(unix)]
    fn of(metadata: &Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
            changed_ns: i128::from(metadata.ctime()) * 1_000_000_000
                + i128::from(metadata.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    fn of(metadata: &Metadata) -> Stamp {
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        Stamp {
            device: 0,
            inode: 0,
            len: metadata.len(),
            modified_ns,
            changed_ns: modified_ns,
        }
    }

    fn read(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }

    /// Whether the version changed more than `settle` ago, so that no
    /// later version can have the same stamp.
    fn settled(&self, settle: Duration) -> bool {
        let now_ns = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX));
        let newest = self.modified_ns.max(self.changed_ns);
        now_ns - newest > i128::try_from(settle.as_nanos()).unwrap_or(i128::MAX)
    }
}

/// One file's last parsed value and the version it was parsed from.
#[derive(Debug)]
pub(crate) struct ReadCache<T> {
    slot: Mutex<Option<Kept<T>>>,
    /// [`SETTLE`], but in tests.
    settle: Duration,
    /// [`super::read_scope::RECHECK_AFTER`], but in tests.
    recheck: Duration,
}

/// A kept version.
#[derive(Debug)]
struct Kept<T> {
    stamp: Stamp,
    /// When the last check that found the file still at `stamp` started
    /// (see [`super::read_scope`]).
    checked: Instant,
    /// Shared, so that a read looks at it outside the lock.
    value: Arc<T>,
    /// The file, when this process wrote it: held open so that its inode
    /// number stays its own (see the module docs).
    _held: Option<File>,
    /// The directory watch's generation read before the check that found
    /// this version, when the watch sees every change of the file: while
    /// the generation stays, the version stays.
    generation: Option<u64>,
}

impl<T> Default for ReadCache<T> {
    fn default() -> Self {
        ReadCache {
            slot: Mutex::new(None),
            settle: SETTLE,
            recheck: super::read_scope::RECHECK_AFTER,
        }
    }
}

impl<T: Clone> ReadCache<T> {
    /// `path` parsed by `read`, or the value parsed last when the file has
    /// not changed since. `read` returns `None` for a missing file. The
    /// tests' shorthand: the store reads in place, through
    /// [`ReadCache::with`].
    #[cfg(test)]
    pub(crate) fn get(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<Option<T>, StateError>,
    ) -> Result<Option<T>, StateError> {
        self.with(path, None, read, T::clone)
    }

    /// [`ReadCache::get`], but `inspect` of the value in place instead of a
    /// copy of it (a copy of the profiles file is a copy of every secret);
    /// `watch` watches `path`'s directory, if anything does.
    pub(crate) fn with<R>(
        &self,
        path: &Path,
        watch: Option<&DirWatch>,
        read: impl FnOnce(&Path) -> Result<Option<T>, StateError>,
        inspect: impl FnOnce(&T) -> R,
    ) -> Result<Option<R>, StateError> {
        // The lock is held only to look at the slot, never while the value
        // is inspected: the gateway's workers read the same files for every
        // request, and a worker preempted while inspecting under the lock
        // left the other waiting in the kernel (docs/performance.md).
        let recent =
            self.confirm(|kept| answers_for_this_read(kept.checked, self.recheck).then_some(None));
        if let Some(value) = recent {
            return Ok(Some(inspect(&value)));
        }
        // Read before the file is checked: a change after that check moves
        // the generation again.
        let generation = watch.and_then(DirWatch::generation);
        if let Some(now) = generation {
            let quiet = self
                .confirm(|kept| (kept.generation == Some(now.value)).then_some(Some(now.read_at)));
            if let Some(value) = quiet {
                return Ok(Some(inspect(&value)));
            }
        }
        let checked = Instant::now();
        let Some(before) = Stamp::read(path) else {
            *self.slot() = None;
            return Ok(read(path)?.as_ref().map(inspect));
        };
        let trusted = watched(generation, path);
        let same = self.confirm(|kept| {
            (kept.stamp == before).then(|| {
                kept.generation = trusted;
                Some(checked)
            })
        });
        if let Some(value) = same {
            return Ok(Some(inspect(&value)));
        }
        let Some(value) = read(path)?.map(Arc::new) else {
            return Ok(None);
        };
        // Kept only if no write replaced the file while it was read, and the
        // version has settled (see the module docs).
        if Stamp::read(path) == Some(before) && before.settled(self.settle) {
            *self.slot() = Some(Kept {
                stamp: before,
                checked,
                value: value.clone(),
                _held: None,
                generation: trusted,
            });
        }
        Ok(Some(inspect(&value)))
    }

    /// The kept value, when `test` vouches for it; `test` answers with
    /// the start of the check it stands for, if that is a new one.
    fn confirm(
        &self,
        test: impl FnOnce(&mut Kept<T>) -> Option<Option<Instant>>,
    ) -> Option<Arc<T>> {
        let mut slot = self.slot();
        let kept = slot.as_mut()?;
        let checked = test(kept)?;
        if let Some(checked) = checked {
            kept.checked = kept.checked.max(checked);
        }
        Some(kept.value.clone())
    }

    /// Keeps the version this process just wrote to `path` (under the
    /// state lock), `written` being the file as the write left it, open.
    /// The version is read back with `read`, so that what is kept is what
    /// any later read would parse, and kept only if `path` still names the
    /// written file after that read. Where file stamps carry no inode
    /// (not Unix), nothing is kept.
    pub(crate) fn keep_written(
        &self,
        path: &Path,
        written: File,
        read: impl FnOnce(&Path) -> Result<Option<T>, StateError>,
    ) {
        let Ok(metadata) = written.metadata() else {
            return;
        };
        let stamp = Stamp::of(&metadata);
        if stamp.inode == 0 {
            return;
        }
        let Ok(Some(value)) = read(path) else {
            return;
        };
        // The written inode is held, so it cannot leave and come back: the
        // same stamp after the read means the read was of it.
        let checked = Instant::now();
        if Stamp::read(path) == Some(stamp) {
            *self.slot() = Some(Kept {
                stamp,
                checked,
                value: Arc::new(value),
                _held: Some(written),
                // The write's own events are still queued: the next read
                // takes them and checks the file once.
                generation: None,
            });
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Kept<T>>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The generation a check of `path` may be trusted with: the one read
/// before it, when the watch sees every change of the file.
fn watched(generation: Option<Generation>, path: &Path) -> Option<u64> {
    generation
        .filter(|_| watchable_file(path))
        .map(|generation| generation.value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_version_written_just_now_is_never_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        let cache = ReadCache::<String>::default();
        let read = |p: &Path| {
            reads.set(reads.get() + 1);
            Ok(std::fs::read_to_string(p).ok())
        };
        std::fs::write(&path, "one").unwrap();
        for _ in 0..3 {
            assert_eq!(cache.get(&path, read).unwrap().as_deref(), Some("one"));
        }
        assert_eq!(reads.get(), 3, "a version under two seconds old was kept");
    }

    /// A reader of JSON state files that counts its reads in `reads`.
    fn counted_json_read(
        reads: &Cell<usize>,
    ) -> impl Fn(&Path) -> Result<Option<serde_json::Value>, StateError> + Copy + '_ {
        move |p: &Path| {
            reads.set(reads.get() + 1);
            crate::state::files::read_json(p)
        }
    }

    /// `{"n": 1}` written by this process to `path`, and kept.
    fn written_and_kept(
        cache: &ReadCache<serde_json::Value>,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<Option<serde_json::Value>, StateError>,
    ) {
        let value = serde_json::json!({"n": 1});
        let written = crate::state::files::write_json_atomic_kept(path, &value).unwrap();
        cache.keep_written(path, written, read);
    }

    /// Another writer replaces the file by rename with `{"n": n}`, written
    /// as this process writes it (for `n` of one digit, the same size).
    fn replaced_by_another_writer(dir: &Path, path: &Path, n: u32) {
        let other = dir.join("other.json");
        std::fs::write(&other, format!("{{\n  \"n\": {n}\n}}\n")).unwrap();
        std::fs::rename(&other, path).unwrap();
    }

    #[test]
    fn a_version_this_process_wrote_is_kept_at_once_until_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        let cache = ReadCache::<serde_json::Value>::default();
        let read = counted_json_read(&reads);
        written_and_kept(&cache, &path, read);
        assert_eq!(reads.get(), 1, "the written version is read back once");
        for _ in 0..3 {
            assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 1);
        }
        assert_eq!(reads.get(), 1, "a kept version was read again");
        // Another writer replaces it by rename, with the same size: seen at
        // once (and, being unsettled, read on every call).
        replaced_by_another_writer(dir.path(), &path, 2);
        assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 2);
        assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 2);
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn a_written_version_replaced_before_it_is_read_back_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        let cache = ReadCache::<serde_json::Value>::default();
        let read = counted_json_read(&reads);
        let written =
            crate::state::files::write_json_atomic_kept(&path, &serde_json::json!({"n": 1}))
                .unwrap();
        crate::state::files::write_json_atomic(&path, &serde_json::json!({"n": 2})).unwrap();
        cache.keep_written(&path, written, read);
        assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 2);
        assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 2);
        assert_eq!(reads.get(), 3, "a version it did not write was kept");
    }

    #[tokio::test]
    async fn in_a_run_a_check_made_since_it_began_answers_for_its_later_reads() {
        use crate::state::read_scope::reads_of_one_run;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let read = |p: &Path| crate::state::files::read_json::<serde_json::Value>(p);
        // A window no test machine's pause outlasts.
        let cache = ReadCache::<serde_json::Value> {
            recheck: Duration::from_secs(3600),
            ..ReadCache::default()
        };
        let n = |value: Option<serde_json::Value>| value.unwrap()["n"].as_u64().unwrap();
        reads_of_one_run(async {
            written_and_kept(&cache, &path, read);
            // Replaced during the run, after its check: concurrent with it.
            replaced_by_another_writer(dir.path(), &path, 2);
            assert_eq!(n(cache.get(&path, read).unwrap()), 1);
        })
        .await;
        // Outside a run every read checks; a run that began after the
        // change checks too, since no check was made during it.
        assert_eq!(n(cache.get(&path, read).unwrap()), 2);
        reads_of_one_run(async {
            assert_eq!(n(cache.get(&path, read).unwrap()), 2);
        })
        .await;
    }

    #[tokio::test]
    async fn in_a_run_a_check_older_than_the_window_is_made_again() {
        use crate::state::read_scope::reads_of_one_run;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let read = |p: &Path| crate::state::files::read_json::<serde_json::Value>(p);
        let cache = ReadCache::<serde_json::Value> {
            recheck: Duration::ZERO,
            ..ReadCache::default()
        };
        reads_of_one_run(async {
            written_and_kept(&cache, &path, read);
            replaced_by_another_writer(dir.path(), &path, 2);
            assert_eq!(cache.get(&path, read).unwrap().unwrap()["n"], 2);
        })
        .await;
    }

    /// A cache whose versions settle at once, for the watch tests.
    fn settled_at_once() -> ReadCache<String> {
        ReadCache::<String> {
            settle: Duration::ZERO,
            ..ReadCache::default()
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn under_a_watch_a_change_in_the_directory_is_seen_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).expect("a temporary directory can be watched");
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        let cache = settled_at_once();
        let read = |p: &Path| {
            reads.set(reads.get() + 1);
            Ok(std::fs::read_to_string(p).ok())
        };
        std::fs::write(&path, "one").unwrap();
        let get = || {
            cache
                .with(&path, Some(&watch), read, String::clone)
                .unwrap()
        };
        assert_eq!(get().as_deref(), Some("one"));
        assert_eq!(get().as_deref(), Some("one"));
        assert_eq!(reads.get(), 1, "a quiet directory's file was read again");
        // Replaced by rename with the same size, then edited in place.
        let temp = dir.path().join("state.json.tmp");
        std::fs::write(&temp, "two").unwrap();
        std::fs::rename(&temp, &path).unwrap();
        assert_eq!(get().as_deref(), Some("two"));
        std::fs::write(&path, "three").unwrap();
        assert_eq!(get().as_deref(), Some("three"));
        assert_eq!(reads.get(), 3);
        // Another file of the directory changes: this one is checked, not
        // read again.
        std::fs::write(dir.path().join("other.json"), "x").unwrap();
        assert_eq!(get().as_deref(), Some("three"));
        assert_eq!(reads.get(), 3);
    }

    /// Readers side by side, under a watch, while another thread replaces
    /// the file by rename again and again: a read that starts after a
    /// write has returned sees that version or a later one, and no reader
    /// goes back. (Each version has its own length, so the stamps differ
    /// even when an inode number comes back within one clock tick.)
    #[cfg(target_os = "linux")]
    #[test]
    fn under_a_watch_racing_readers_never_see_a_replaced_version() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        const VERSIONS: usize = 400;
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).unwrap();
        let path = dir.path().join("auth-state.json");
        let cache = settled_at_once();
        let write = |version: usize| {
            let temp = dir.path().join("auth-state.json.tmp");
            std::fs::write(&temp, "x".repeat(version)).unwrap();
            std::fs::rename(&temp, &path).unwrap();
        };
        write(1);
        let published = AtomicUsize::new(1);
        let read = |p: &Path| Ok(std::fs::read_to_string(p).ok());
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    let mut seen = 0;
                    loop {
                        let floor = published.load(Ordering::SeqCst);
                        let now = cache
                            .with(&path, Some(&watch), read, String::len)
                            .unwrap()
                            .unwrap();
                        assert!(now >= floor, "read {now} after {floor} was written");
                        assert!(now >= seen, "read {now} after reading {seen}");
                        seen = now;
                        if floor == VERSIONS {
                            break;
                        }
                    }
                });
            }
            for version in 2..=VERSIONS {
                write(version);
                published.store(version, Ordering::SeqCst);
            }
        });
    }

    /// A state file that is a symbolic link to a file elsewhere changes
    /// where the watch does not look: every read checks it.
    #[cfg(target_os = "linux")]
    #[test]
    fn under_a_watch_a_linked_file_is_still_checked() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).unwrap();
        let target = elsewhere.path().join("profiles.json");
        std::fs::write(&target, "one").unwrap();
        let path = dir.path().join("state.json");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let cache = settled_at_once();
        let read = |p: &Path| Ok(std::fs::read_to_string(p).ok());
        let get = || {
            cache
                .with(&path, Some(&watch), read, String::clone)
                .unwrap()
        };
        assert_eq!(get().as_deref(), Some("one"));
        assert_eq!(get().as_deref(), Some("one"));
        std::fs::write(&target, "changed").unwrap();
        assert_eq!(
            get().as_deref(),
            Some("changed"),
            "the watch answered for a link"
        );
    }

    #[test]
    fn a_changed_file_is_read_again_and_an_unchanged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        // Every version settled at once (a file's change time cannot be
        // set back for the test).
        let cache = ReadCache::<String> {
            settle: Duration::ZERO,
            ..ReadCache::default()
        };
        let read = |p: &Path| {
            reads.set(reads.get() + 1);
            Ok(std::fs::read_to_string(p).ok())
        };
        assert_eq!(cache.get(&path, read).unwrap(), None);
        std::fs::write(&path, "one").unwrap();
        assert_eq!(cache.get(&path, read).unwrap().as_deref(), Some("one"));
        assert_eq!(cache.get(&path, read).unwrap().as_deref(), Some("one"));
        assert_eq!(reads.get(), 2, "the unchanged file was read again");
        // An atomic rewrite of the same size: a new inode.
        let temp = dir.path().join("state.json.tmp");
        std::fs::write(&temp, "two").unwrap();
        std::fs::rename(&temp, &path).unwrap();
        assert_eq!(cache.get(&path, read).unwrap().as_deref(), Some("two"));
        // An edit in place that changes the size.
        std::fs::write(&path, "three").unwrap();
        assert_eq!(cache.get(&path, read).unwrap().as_deref(), Some("three"));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(cache.get(&path, read).unwrap(), None);
    }
}
