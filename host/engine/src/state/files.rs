//! Reading and writing state files safely.
//!
//! Every read-modify-write holds [`StateLock`], an exclusive advisory lock on
//! a separate lock file that works across processes (`flock` on Unix), and
//! re-reads the file under it. Writes go to a temporary file in the same
//! directory, are flushed to disk, and are renamed over the old file, so a
//! crash at any moment leaves either the old file or the new one, never a
//! torn mix. Files are created with mode 0600 and directories with 0700:
//! `auth-profiles.json` holds secrets.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::blocking::off_async;
use super::error::StateError;

/// An exclusive lock on a state directory, released on drop.
#[derive(Debug)]
pub struct StateLock {
    _file: File,
}

impl StateLock {
    /// Blocks until the lock at `path` is held (creating it if needed).
    pub fn acquire(path: &Path) -> Result<StateLock, StateError> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let mut options = OpenOptions::new();
        options.create(true).truncate(false).write(true);
        private_mode(&mut options);
        let file = options.open(path).map_err(|e| StateError::io(path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            // Held by another process (or writer): waiting may take as long
            // as its write does, so it waits off the async workers.
            Err(std::fs::TryLockError::WouldBlock) => {
                off_async(|| file.lock()).map_err(|e| StateError::io(path, e))?
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StateError::io(path, e)),
        }
        Ok(StateLock { _file: file })
    }
}

#[cfg(unix)]
fn private_mode(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.mode(0o600);
}

#[cfg(not(unix))]
fn private_mode(_options: &mut OpenOptions) {}

/// Creates `dir` and its parents, new ones with mode 0700.
pub(crate) fn create_private_dir(dir: &Path) -> Result<(), StateError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| StateError::io(dir, e))
}

/// Reads and parses a JSON file; `None` when it does not exist.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, StateError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StateError::io(path, e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StateError::json(path, &e))
}

/// Writes `value` as pretty JSON to `path` atomically, mode 0600.
pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StateError> {
    write_json_atomic_kept(path, value).map(drop)
}

/// [`write_json_atomic`], returning the written file still open: while it
/// is held, its inode number cannot name another file, which is what lets
/// the store's read cache keep a version it wrote at once.
pub(crate) fn write_json_atomic_kept<T: Serialize>(
    path: &Path,
    value: &T,
) -> Result<File, StateError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| StateError::json(path, &e))?;
    bytes.push(b'\n');
    write_atomic_kept(path, &bytes)
}

/// Writes `bytes` to `path` atomically: temporary file (0600) in the same
/// directory, fsync, rename, fsync of the directory. The fsyncs wait on the
/// disk, so the write runs off the async workers.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StateError> {
    write_atomic_kept(path, bytes).map(drop)
}

/// [`write_atomic`], returning the written file still open (see
/// [`write_json_atomic_kept`]).
fn write_atomic_kept(path: &Path, bytes: &[u8]) -> Result<File, StateError> {
    off_async(|| write_atomic_here(path, bytes))
}

/// The write itself; the file it wrote, open.
fn write_atomic_here(path: &Path, bytes: &[u8]) -> Result<File, StateError> {
    let dir = path
        .parent()
        .ok_or_else(|| StateError::Refused(format!("{} has no directory", path.display())))?;
    create_private_dir(dir)?;
    // tempfile creates the file with mode 0600.
    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .map_err(|e| StateError::io(dir, e))?;
    temp.write_all(bytes)
        .map_err(|e| StateError::io(temp.path(), e))?;
    temp.as_file()
        .sync_all()
        .map_err(|e| StateError::io(temp.path(), e))?;
    let file = temp
        .persist(path)
        .map_err(|e| StateError::io(path, e.error))?;
    sync_dir(dir)?;
    Ok(file)
}

/// How the temporary files of [`write_atomic`] are named.
const TEMP_PREFIX: &str = ".tmp-";

/// A temporary file older than this is a killed write's: a write lives
/// milliseconds, however slow the disk.
pub(crate) const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the temporary files killed writes left in `dir` (copies of
/// state files, secrets included); returns how many went. A directory
/// that does not exist has none.
pub(crate) fn remove_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let is_temp = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with(TEMP_PREFIX));
        let stale = entry
            .metadata()
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= STALE_TEMP_AGE);
        if is_temp && stale && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::info!(dir = %dir.display(), removed, "removed temporary files of interrupted writes");
    }
    removed
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<(), StateError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StateError::io(dir, e))
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<(), StateError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/state.json");
        write_json_atomic(&path, &serde_json::json!({"a": 1})).unwrap();
        write_json_atomic(&path, &serde_json::json!({"a": 2})).unwrap();
        let value: serde_json::Value = read_json(&path).unwrap().unwrap();
        assert_eq!(value["a"], 2);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            let dir_mode = fs::metadata(path.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        // No temporary files are left behind.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn temporary_files_of_killed_writes_are_removed_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".tmp-killed");
        let fresh = dir.path().join(".tmp-writing");
        let state = dir.path().join("auth-profiles.json");
        for path in [&old, &fresh, &state] {
            fs::write(path, "{}").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - STALE_TEMP_AGE * 2;
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        File::options()
            .write(true)
            .open(&state)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert_eq!(remove_stale_temps(dir.path()), 1);
        assert!(!old.exists() && fresh.exists() && state.exists());
        assert_eq!(remove_stale_temps(&dir.path().join("missing")), 0);
    }

    #[test]
    fn parse_errors_name_the_file_and_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        fs::write(&path, "{\n  \"a\": 1,\n  oops\n}").unwrap();
        let error = read_json::<serde_json::Value>(&path)
            .unwrap_err()
            .to_string();
        assert!(error.contains("bad.json"), "{error}");
        assert!(error.contains("line 3 column 3"), "{error}");
    }

    #[test]
    fn missing_files_are_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_json::<serde_json::Value>(&dir.path().join("nope.json"))
                .unwrap()
                .is_none()
        );
    }
}
