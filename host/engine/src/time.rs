//! Time for the engine: the system clock in production, a virtual one in
//! tests (sleeping advances it at once, so scenarios spanning hours run in
//! microseconds and deterministically), and `now_ms`, the one reading of
//! the system clock.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in milliseconds since the Unix epoch (0 if the system clock is
/// before it).
///
/// A gateway request reads the clock about a dozen times (the plan, each
/// attempt's start and end, the metrics, the reply's `created`); through
/// `SystemTime` and a `Duration` each read cost ~110 instructions besides
/// the clock itself, a whole percent of the request. On Unix the clock is
/// read as seconds and nanoseconds and turned into milliseconds with two
/// integer operations.
pub fn now_ms() -> u64 {
    #[cfg(unix)]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid, writable timespec for the call's
        // duration, and CLOCK_REALTIME is a clock every Unix has.
        if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } == 0 {
            return epoch_ms(now.tv_sec, now.tv_nsec);
        }
    }
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Milliseconds since the epoch of a clock reading: 0 before the epoch,
/// as `SystemTime` reads it.
#[cfg(unix)]
fn epoch_ms(seconds: libc::time_t, nanoseconds: libc::c_long) -> u64 {
    let (Ok(seconds), Ok(nanoseconds)) = (u64::try_from(seconds), u64::try_from(nanoseconds))
    else {
        return 0;
    };
    seconds
        .saturating_mul(1000)
        .saturating_add(nanoseconds / 1_000_000)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_clock_systemtime_reads() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let now = now_ms();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        assert!(u128::from(now) >= before.as_millis(), "{now} {before:?}");
        assert!(u128::from(now) <= after.as_millis(), "{now} {after:?}");
    }

    #[cfg(unix)]
    #[test]
    fn milliseconds_of_a_reading() {
        assert_eq!(epoch_ms(0, 0), 0);
        assert_eq!(epoch_ms(1_767_225_600, 999_999_999), 1_767_225_600_999);
        assert_eq!(epoch_ms(1, 1_000_000), 1_001);
        assert_eq!(epoch_ms(-1, 0), 0, "before the epoch");
        let latest = u64::try_from(libc::time_t::MAX).unwrap();
        assert_eq!(
            epoch_ms(libc::time_t::MAX, 0),
            latest.saturating_mul(1000),
            "saturates"
        );
    }
}
