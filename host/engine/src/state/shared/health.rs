//! Whether Redis answers, and when to try it again while it does not.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// While Redis is down, one caller tries it again at most this often; the
/// others use the local copy meanwhile. Each try can cost a request the
/// whole timeout, so not more often; a second is also the longest a
/// returned Redis waits to be used again.
pub(crate) const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// What a caller should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    /// Redis is up: use it.
    Use,
    /// Redis is down and due another try: this caller makes it (and
    /// reconciles if it answers).
    Probe,
    /// Redis is down: use the local copy.
    Skip,
}

/// The store's health, shared by every clone of one agent's store.
#[derive(Debug)]
pub(super) struct Health {
    up: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// When it went down (ms since the epoch), while it is down.
    down_since_ms: Option<u64>,
    last_try: Option<Instant>,
    /// A probe is in flight.
    probing: bool,
    /// What the last failure said.
    error: Option<String>,
}

/// A copy of the health, for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthView {
    /// Redis answered the last call.
    pub healthy: bool,
    /// Since when it has not, in ms since the epoch.
    pub down_since_ms: Option<u64>,
    /// What the last failure said.
    pub error: Option<String>,
}

impl Health {
    /// Up until a call fails.
    pub(super) fn new() -> Health {
        Health {
            up: AtomicBool::new(true),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether it is up.
    pub(super) fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// What to do now.
    pub(super) fn gate(&self) -> Gate {
        if self.is_up() {
            return Gate::Use;
        }
        let mut inner = self.inner();
        let due = inner
            .last_try
            .is_none_or(|at| at.elapsed() >= RETRY_INTERVAL);
        if inner.probing || !due {
            return Gate::Skip;
        }
        inner.probing = true;
        inner.last_try = Some(Instant::now());
        Gate::Probe
    }

    /// A call failed with `error` (`probe`: the probe's own call). Returns
    /// whether Redis was up until now, to log once per outage.
    pub(super) fn failed(&self, error: String, probe: bool) -> bool {
        let was_up = self.up.swap(false, Ordering::AcqRel);
        let mut inner = self.inner();
        // Only the prober ends its probe: a call begun before an outage
        // and failing late must not start a second one.
        if probe || was_up {
            inner.probing = false;
            inner.last_try = Some(Instant::now());
        }
        if was_up {
            inner.down_since_ms = Some(crate::time::now_ms());
        }
        inner.error = Some(error);
        was_up
    }

    /// A probe answered and the local changes are reconciled: up again.
    pub(super) fn recovered(&self) {
        let mut inner = self.inner();
        inner.probing = false;
        inner.down_since_ms = None;
        inner.error = None;
        self.up.store(true, Ordering::Release);
    }

    /// The health as it is now.
    pub(super) fn view(&self) -> HealthView {
        let inner = self.inner();
        HealthView {
            healthy: self.is_up(),
            down_since_ms: inner.down_since_ms,
            error: inner.error.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_probes_per_interval_while_down() {
        let health = Health::new();
        assert_eq!(health.gate(), Gate::Use);
        assert!(health.failed("refused".into(), false));
        assert!(!health.failed("refused".into(), false));
        // Just tried: everyone uses the local copy.
        assert_eq!(health.gate(), Gate::Skip);
        health.inner().last_try = Some(Instant::now() - RETRY_INTERVAL);
        assert_eq!(health.gate(), Gate::Probe);
        assert_eq!(health.gate(), Gate::Skip, "a probe is already in flight");
        let view = health.view();
        assert!(!view.healthy && view.down_since_ms.is_some());
        assert_eq!(view.error.as_deref(), Some("refused"));
        health.recovered();
        assert_eq!(health.gate(), Gate::Use);
        assert_eq!(health.view().error, None);
    }
}
