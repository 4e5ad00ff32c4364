//! Time for the runner: the system clock in production, a virtual one in
//! tests (sleeping advances it at once, so scenarios spanning hours run in
//! microseconds and deterministically).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch (0 if the system clock is
/// before it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A clock the runner reads and sleeps on.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
    /// Waits `ms` milliseconds.
    fn sleep(&self, ms: u64) -> impl Future<Output = ()> + Send;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        now_ms()
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> + Send {
        tokio::time::sleep(Duration::from_millis(ms))
    }
}

/// A virtual clock: starts where it is told and moves only when slept on
/// or advanced.
#[derive(Debug, Clone, Default)]
pub struct VirtualClock {
    now: Arc<AtomicU64>,
    slept: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock reading `now_ms`.
    pub fn at(now_ms: u64) -> Self {
        VirtualClock {
            now: Arc::new(AtomicU64::new(now_ms)),
            slept: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Total time slept on this clock.
    pub fn slept_ms(&self) -> u64 {
        self.slept.load(Ordering::SeqCst)
    }
}

impl Clock for VirtualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn sleep(&self, ms: u64) -> impl Future<Output = ()> + Send {
        self.slept.fetch_add(ms, Ordering::SeqCst);
        self.advance(ms);
        std::future::ready(())
    }
}
