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

use std::fs::Metadata;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::error::StateError;

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
    slot: Mutex<Option<(Stamp, T)>>,
    /// [`SETTLE`], but in tests.
    settle: Duration,
}

impl<T> Default for ReadCache<T> {
    fn default() -> Self {
        ReadCache {
            slot: Mutex::new(None),
            settle: SETTLE,
        }
    }
}

impl<T: Clone> ReadCache<T> {
    /// `path` parsed by `read`, or the value parsed last when the file has
    /// not changed since. `read` returns `None` for a missing file.
    pub(crate) fn get(
        &self,
        path: &Path,
        read: impl FnOnce(&Path) -> Result<Option<T>, StateError>,
    ) -> Result<Option<T>, StateError> {
        let Some(before) = Stamp::read(path) else {
            *self.slot() = None;
            return read(path);
        };
        if let Some((stamp, value)) = &*self.slot() {
            if *stamp == before {
                return Ok(Some(value.clone()));
            }
        }
        let value = read(path)?;
        // Kept only if no write replaced the file while it was read, and the
        // version has settled (see the module docs).
        if let (Some(value), Some(after)) = (&value, Stamp::read(path)) {
            if after == before && before.settled(self.settle) {
                *self.slot() = Some((before, value.clone()));
            }
        }
        Ok(value)
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<(Stamp, T)>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }
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

    #[test]
    fn a_changed_file_is_read_again_and_an_unchanged_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        let reads = Cell::new(0);
        // Every version settled at once (a file's change time cannot be
        // set back for the test).
        let cache = ReadCache::<String> {
            slot: Mutex::new(None),
            settle: Duration::ZERO,
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
