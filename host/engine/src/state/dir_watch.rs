//! Change notification for an agent's state directory: one cheap check
//! that nothing in it changed, instead of a `statx` per state file.
//!
//! A gateway checks `auth-profiles.json` and `auth-state.json` once per
//! run each (see [`super::read_scope`]). Each check was a `statx` with a
//! walk of the whole path: 6.5 % of the gateway's CPU per request
//! (docs/performance.md). With an inotify watch on the
//! directory, the kernel queues an event in the same system call that
//! changes a file there (a write, a rename over it, a removal) — before
//! that call returns. So a look at the watch's queue that finds it empty
//! (and no reader draining it meanwhile) proves that no change completed
//! since it was last drained, as surely as a `stat` would: one `FIONREAD`
//! answers for both files, and a file is stat-ed again only after an
//! event.
//!
//! Where an event might not be queued, there is no watch and every read
//! checks the file as before: other systems than Linux, filesystems that
//! another machine can change (NFS, SMB, FUSE and every type not on the
//! local list), a directory reached through a symbolic link (a new link
//! target would not be watched), and files that are themselves symbolic
//! or hard links (changed through another directory); see
//! [`watchable_file`]. A watch whose directory, or a directory above it,
//! is removed or moved, or that cannot be read, stops answering for good.
//! One change it does not see: a filesystem mounted over the directory or
//! one above it while the process runs (inotify reports no mounts); an
//! operator who does that restarts the gateway.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::read_scope::{answers_for_a_read_at, RECHECK_AFTER};

/// A watch on one directory: a generation that moves whenever anything in
/// the directory changed since it was last read.
#[derive(Debug)]
// Elsewhere than on Linux none is ever made (see `DirWatch::new`).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct DirWatch {
    /// The inotify instance, watching the directory.
    #[cfg(target_os = "linux")]
    queue: std::os::fd::OwnedFd,
    /// Set once the watch can no longer see changes.
    blind: AtomicBool,
    /// The generation, kept as a sequence count: even while no drain of
    /// the queue is under way, odd during one; it moves only under
    /// `draining`. A reader that saw the same even count before and after
    /// finding the queue empty knows no drain took events in between (see
    /// [`DirWatch::generation`]).
    sequence: AtomicU64,
    /// Held by the one reader that takes events off the queue.
    draining: Mutex<()>,
    /// The latest read's finding, which answers for runs that began
    /// before it.
    last: Mutex<Option<Generation>>,
    /// [`RECHECK_AFTER`], but in tests.
    recheck: Duration,
}

/// What a check of the directory found: its generation, and when the read
/// that found it started (a check that answers for reads in runs that
/// began before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Generation {
    pub(crate) value: u64,
    pub(crate) read_at: Instant,
}

impl DirWatch {
    /// A watch on `dir`, where its changes are sure to be queued (see the
    /// module docs); `None` elsewhere.
    pub(crate) fn new(dir: &Path) -> Option<DirWatch> {
        #[cfg(target_os = "linux")]
        {
            Some(DirWatch {
                queue: linux::watch(dir)?,
                blind: AtomicBool::new(false),
                sequence: AtomicU64::new(0),
                draining: Mutex::new(()),
                last: Mutex::new(None),
                recheck: RECHECK_AFTER,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = dir;
            None
        }
    }

    /// The directory's generation now; `None` when the watch no longer
    /// sees changes. A look at the queue made since the current run began
    /// answers for the run (as a `stat` would, see
    /// [`super::read_scope`]); otherwise the queue is looked at now.
    ///
    /// Looking does not take events off the queue (`FIONREAD`), so readers
    /// side by side all see what waits there and need no lock: an empty
    /// queue, with the same even count before and after, means nothing
    /// changed since the generation last moved — a drain that took events
    /// meanwhile would have moved the count before taking them. Only a
    /// reader that finds events (or a drain under way) takes the lock, to
    /// drain them or to wait for the drain under way. Before, every reader
    /// drained, and two reads side by side had to move the generation in
    /// case the other had taken events: with two workers that sent a third
    /// of a gateway's requests back to `statx` (docs/performance.md).
    pub(crate) fn generation(&self) -> Option<Generation> {
        if self.blind.load(Ordering::Acquire) {
            return None;
        }
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        // One clock read for both: whether the last look answers, and when
        // a new one starts (taken before it, so it errs early).
        let read_at = Instant::now();
        let answers =
            |last: &Generation| answers_for_a_read_at(last.read_at, self.recheck, || read_at);
        if let Some(last) = last.filter(answers) {
            return Some(last);
        }
        let before = self.sequence.load(Ordering::SeqCst);
        let quiet = before.is_multiple_of(2)
            && self.pending() == Pending::Quiet
            && self.sequence.load(Ordering::SeqCst) == before;
        let value = if quiet { before } else { self.drained()? };
        let found = Generation { value, read_at };
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|last| last.read_at < read_at) {
            *last = Some(found);
        }
        Some(found)
    }

    /// The generation once the queue is empty, under the lock: moved when
    /// this reader took events off it; `None` when the watch went blind.
    fn drained(&self) -> Option<u64> {
        let _turn = self.draining.lock().unwrap_or_else(|e| e.into_inner());
        // Even here: the count moves only under the lock.
        let settled = self.sequence.load(Ordering::SeqCst);
        match self.pending() {
            Pending::Quiet => return Some(settled),
            Pending::Events => {
                self.sequence.store(settled + 1, Ordering::SeqCst);
                let seeing = self.drain();
                self.sequence.store(settled + 2, Ordering::SeqCst);
                if seeing {
                    return Some(settled + 2);
                }
            }
            Pending::Blind => {}
        }
        self.blind.store(true, Ordering::Release);
        None
    }

    #[cfg(target_os = "linux")]
    fn pending(&self) -> Pending {
        linux::pending(&self.queue)
    }

    #[cfg(not(target_os = "linux"))]
    fn pending(&self) -> Pending {
        Pending::Blind
    }

    /// Takes every queued event off the queue; `false` when one says the
    /// watch can no longer see changes (or the queue cannot be read).
    #[cfg(target_os = "linux")]
    fn drain(&self) -> bool {
        linux::drain(&self.queue)
    }

    #[cfg(not(target_os = "linux"))]
    fn drain(&self) -> bool {
        false
    }
}

/// What waits on the queue, looked at without taking it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
enum Pending {
    Quiet,
    Events,
    /// The queue cannot be looked at.
    Blind,
}

/// Whether changes to the file at `path` are seen by a watch on its
/// directory: a regular file with one name (a symbolic link's target, or
/// a file with another hard link, can change through another directory).
pub(crate) fn watchable_file(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file() && m.nlink() == 1)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::Path;

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use rustix::io::Errno;

    use super::Pending;

    /// Filesystems whose every change is made by this kernel, so that it
    /// queues the event (`statfs`'s `f_type`, from `linux/magic.h`):
    /// ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, F2FS, ZFS, bcachefs.
    const LOCAL_FILESYSTEMS: [u32; 8] = [
        0xEF53,
        0x5846_5342,
        0x9123_683E,
        0x0102_1994,
        0x794C_7630,
        0xF2F5_2010,
        0x2FC1_2FC1,
        0xCA45_1A4E,
    ];

    /// What changes the directory's contents, and what ends the watch.
    fn watched_events() -> WatchFlags {
        WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
    }

    /// What ends the watch when it happens to a directory above the
    /// watched one: its path would then lead to another directory, whose
    /// changes this watch does not see.
    fn ancestor_events() -> WatchFlags {
        WatchFlags::DELETE_SELF | WatchFlags::MOVE_SELF | WatchFlags::ONLYDIR
    }

    /// An inotify instance watching `dir`, if `dir` is a directory on a
    /// local filesystem reached without symbolic links.
    ///
    /// Each directory above it is watched too, for being moved or
    /// removed: renaming a parent and putting another directory in its
    /// place leaves the watched directory unchanged but no longer at
    /// `dir`. The watches are added from the top down, the directory's
    /// own last, so each path is resolved while everything above it is
    /// already watched: a move that happens before a watch is added is
    /// resolved through, one after it is queued.
    pub(super) fn watch(dir: &Path) -> Option<OwnedFd> {
        let absolute = std::path::absolute(dir).ok()?;
        if std::fs::canonicalize(&absolute).ok()? != absolute {
            return None;
        }
        let kind = rustix::fs::statfs(&absolute).ok()?.f_type;
        // `f_type`'s width varies by architecture; the magic numbers are
        // 32-bit.
        #[allow(clippy::unnecessary_cast)]
        let kind = kind as u32;
        if !LOCAL_FILESYSTEMS.contains(&kind) {
            return None;
        }
        let queue = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        let ancestors: Vec<&Path> = absolute.ancestors().skip(1).collect();
        // The root cannot be moved or removed.
        for ancestor in ancestors.iter().rev().filter(|a| a.parent().is_some()) {
            inotify::add_watch(&queue, *ancestor, ancestor_events()).ok()?;
        }
        inotify::add_watch(&queue, &absolute, watched_events()).ok()?;
        // A symbolic link made above the directory before its watch was
        // added would have been followed.
        if std::fs::canonicalize(&absolute).ok()? != absolute {
            return None;
        }
        Some(queue)
    }

    /// Whether events wait on the queue, left there.
    pub(super) fn pending(queue: &OwnedFd) -> Pending {
        match rustix::io::ioctl_fionread(queue) {
            Ok(0) => Pending::Quiet,
            Ok(_) => Pending::Events,
            Err(_) => Pending::Blind,
        }
    }

    /// Room for a few dozen events a read; more wait for the next read.
    const BUFFER: usize = 2048;

    /// Reads every event queued so far; `false` when one says the watch
    /// is gone (its directory, or one above it, removed, moved or
    /// unmounted) or the queue cannot be read. Any other event, an
    /// overflow included, is a change, which the caller counts.
    pub(super) fn drain(queue: &OwnedFd) -> bool {
        let mut buffer = [MaybeUninit::<u8>::uninit(); BUFFER];
        let mut reader = inotify::Reader::new(queue, &mut buffer);
        loop {
            match reader.next() {
                Ok(event) => {
                    let gone = ReadFlags::DELETE_SELF
                        | ReadFlags::MOVE_SELF
                        | ReadFlags::UNMOUNT
                        | ReadFlags::IGNORED;
                    if event.events().intersects(gone) {
                        return false;
                    }
                }
                Err(Errno::AGAIN) => return true,
                Err(Errno::INTR) => {}
                Err(_) => return false,
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Outside a run every call looks at the queue.
    fn generation(watch: &DirWatch) -> u64 {
        watch.generation().expect("watching").value
    }

    #[test]
    fn every_kind_of_change_moves_the_generation_and_quiet_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).expect("a temporary directory can be watched");
        let path = dir.path().join("auth-state.json");
        let mut last = generation(&watch);
        assert_eq!(generation(&watch), last, "nothing changed");
        let changes: [&dyn Fn(); 4] = [
            &|| std::fs::write(&path, "one").unwrap(),
            &|| {
                let temp = dir.path().join("temp");
                std::fs::write(&temp, "two").unwrap();
                std::fs::rename(&temp, &path).unwrap();
            },
            &|| {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .unwrap();
                file.write_all(b"!").unwrap();
            },
            &|| std::fs::remove_file(&path).unwrap(),
        ];
        for (i, change) in changes.iter().enumerate() {
            change();
            let now = generation(&watch);
            assert_ne!(now, last, "change {i} was not seen");
            assert_eq!(generation(&watch), now, "change {i} was seen twice");
            last = now;
        }
    }

    /// A drain under way may have taken events without moving the count
    /// past them yet: a reader that finds the queue empty meanwhile waits
    /// for that drain instead of vouching for what it took.
    #[test]
    fn a_read_during_a_drain_waits_for_its_count() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).unwrap();
        let before = generation(&watch);
        std::thread::scope(|scope| {
            let turn = watch.draining.lock().unwrap();
            watch.sequence.fetch_add(1, Ordering::SeqCst);
            let reader = scope.spawn(|| generation(&watch));
            std::thread::sleep(Duration::from_millis(100));
            assert!(!reader.is_finished(), "a read vouched during a drain");
            watch.sequence.fetch_add(1, Ordering::SeqCst);
            drop(turn);
            assert_eq!(reader.join().unwrap(), before + 2, "the drain's count");
        });
        assert_eq!(generation(&watch), before + 2, "alone again, a quiet read");
    }

    /// Quiet reads side by side leave the generation where it is: two
    /// workers reading at once must not send the state files back to
    /// `stat`.
    #[test]
    fn quiet_reads_side_by_side_agree() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).unwrap();
        let before = generation(&watch);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..5_000 {
                        assert_eq!(generation(&watch), before, "a quiet read moved it");
                    }
                });
            }
        });
    }

    /// Events taken by one reader move the generation for all of them.
    #[test]
    fn a_change_seen_by_one_reader_is_seen_by_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch::new(dir.path()).unwrap();
        let before = generation(&watch);
        std::fs::write(dir.path().join("auth-state.json"), "x").unwrap();
        let after: Vec<u64> = std::thread::scope(|scope| {
            let readers: Vec<_> = (0..4).map(|_| scope.spawn(|| generation(&watch))).collect();
            readers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        assert!(after.iter().all(|&now| now == before + 2), "{after:?}");
    }

    #[test]
    fn a_removed_directory_ends_the_watch() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("agent");
        std::fs::create_dir(&dir).unwrap();
        let watch = DirWatch::new(&dir).unwrap();
        assert!(watch.generation().is_some());
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir(&dir).unwrap();
        assert_eq!(
            watch.generation(),
            None,
            "a watch of a removed directory answered"
        );
        std::fs::write(dir.join("auth-state.json"), "new").unwrap();
        assert_eq!(watch.generation(), None);
    }

    /// Watches `root/moved/...below/main`, renames `moved` and makes the
    /// same path again: it now leads to files the watch does not see.
    fn assert_a_moved_ancestor_ends_the_watch(below: &[&str]) {
        let root = tempfile::tempdir().unwrap();
        let moved = root.path().join("moved");
        let dir = below
            .iter()
            .fold(moved.clone(), |path, name| path.join(name));
        let dir = dir.join("main");
        std::fs::create_dir_all(&dir).unwrap();
        let watch = DirWatch::new(&dir).unwrap();
        assert!(watch.generation().is_some());
        std::fs::rename(&moved, root.path().join("moved.old")).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("auth-state.json"), "new").unwrap();
        assert_eq!(
            watch.generation(),
            None,
            "a watch answered for a path that leads elsewhere now"
        );
    }

    #[test]
    fn a_moved_parent_ends_the_watch() {
        assert_a_moved_ancestor_ends_the_watch(&[]);
    }

    /// Every directory above is watched, not only the parent.
    #[test]
    fn a_moved_grandparent_ends_the_watch() {
        assert_a_moved_ancestor_ends_the_watch(&["agents"]);
    }

    #[test]
    fn no_watch_through_a_symbolic_link() {
        let parent = tempfile::tempdir().unwrap();
        let real = parent.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = parent.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(DirWatch::new(&real).is_some());
        assert!(DirWatch::new(&link).is_none());
    }

    #[test]
    fn linked_files_are_not_watchable() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, "{}").unwrap();
        assert!(watchable_file(&plain));
        let symlink = dir.path().join("symlink.json");
        std::os::unix::fs::symlink(&plain, &symlink).unwrap();
        assert!(!watchable_file(&symlink));
        let hard = dir.path().join("hard.json");
        std::fs::hard_link(&plain, &hard).unwrap();
        assert!(!watchable_file(&plain), "a file with two names");
        assert!(!watchable_file(&dir.path().join("missing.json")));
    }

    #[tokio::test]
    async fn in_a_run_a_read_made_since_it_began_answers() {
        use crate::state::read_scope::reads_of_one_run;
        let dir = tempfile::tempdir().unwrap();
        let watch = DirWatch {
            // A window no test machine's pause outlasts.
            recheck: Duration::from_secs(3600),
            ..DirWatch::new(dir.path()).unwrap()
        };
        let before = generation(&watch);
        reads_of_one_run(async {
            let first = watch.generation().unwrap();
            // A change during the run, after its read: concurrent with it.
            std::fs::write(dir.path().join("auth-state.json"), "x").unwrap();
            let second = watch.generation().unwrap();
            assert_eq!(first, second, "the run's read answered");
            assert_eq!(first.value, before);
        })
        .await;
        assert_ne!(generation(&watch), before, "seen outside the run");
    }
}
