//! An alarm beside a busy future: what watches a connection is looked at
//! only when something rang for it, not on every wake of the connection.
//!
//! A connection's task is woken several times a request (the request's
//! bytes, the upstream's reply, each write). Its watchdog — the idle and
//! header-read timer, an eviction at the cap, the drain at shutdown — would
//! be polled on each of those wakes as `Notify`s, and every poll of a
//! waiting `Notify` takes that `Notify`'s lock. The drain's is one for all
//! connections, so the worker threads would pass its lock between them on
//! every wake (docs/performance.md). With an alarm,
//! the watchdog's timer wakes the task through the alarm's own waker, and
//! eviction and drain set their flag and ring it; the connection polls its
//! watchdog only when the alarm has rung since it last looked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

use futures_util::task::AtomicWaker;

/// Rung by a watcher (or by a timer, as a [`Waker`]); wakes the task that
/// last asked whether it rang.
#[derive(Debug)]
pub(super) struct Alarm {
    rung: AtomicBool,
    task: AtomicWaker,
}

impl Alarm {
    /// An alarm that has already rung, so that the first look arms what
    /// rings it (a timer rings only once it has been polled).
    pub(super) fn new() -> Arc<Alarm> {
        Arc::new(Alarm {
            rung: AtomicBool::new(true),
            task: AtomicWaker::new(),
        })
    }

    /// Rings: the task that last asked is woken, and its next
    /// [`Alarm::rang`] says so.
    pub(super) fn ring(&self) {
        self.rung.store(true, Ordering::Release);
        self.task.wake();
    }

    /// Whether the alarm rang since the last call; `task` is woken by the
    /// next ring. The waker is registered before the ring is taken, so a
    /// ring in between is either taken now or wakes `task`: none is lost.
    pub(super) fn rang(&self, task: &Waker) -> bool {
        self.task.register(task);
        self.rung.swap(false, Ordering::AcqRel)
    }
}

impl Wake for Alarm {
    fn wake(self: Arc<Self>) {
        self.ring();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.ring();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A task waker that counts its wakes.
    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_first_look_sees_a_ring_and_later_ones_only_new_rings() {
        let alarm = Alarm::new();
        let counted = Arc::new(Counted::default());
        let task = Waker::from(counted.clone());
        assert!(alarm.rang(&task), "the first look arms the watchers");
        assert!(!alarm.rang(&task));
        alarm.ring();
        assert_eq!(counted.0.load(Ordering::SeqCst), 1, "a ring wakes the task");
        assert!(alarm.rang(&task));
        assert!(!alarm.rang(&task), "one ring is taken once");
    }

    #[test]
    fn as_a_waker_it_rings() {
        let alarm = Alarm::new();
        let counted = Arc::new(Counted::default());
        let task = Waker::from(counted.clone());
        assert!(alarm.rang(&task));
        Waker::from(alarm.clone()).wake_by_ref();
        assert_eq!(counted.0.load(Ordering::SeqCst), 1);
        assert!(alarm.rang(&task));
    }

    #[test]
    fn a_ring_wakes_the_task_that_asked_last() {
        let alarm = Alarm::new();
        let (first, second) = (Arc::new(Counted::default()), Arc::new(Counted::default()));
        assert!(alarm.rang(&Waker::from(first.clone())));
        assert!(!alarm.rang(&Waker::from(second.clone())));
        alarm.ring();
        assert_eq!(
            first.0.load(Ordering::SeqCst),
            0,
            "a replaced waker was woken"
        );
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
    }
}
