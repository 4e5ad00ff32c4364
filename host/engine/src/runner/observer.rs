//! Watching a run as it goes: every call's end, every candidate skipped,
//! every fallback step, in the order they happen. The runner logs steps
//! itself (`model_fallback_decision`, F-10.2); an observer is for whoever
//! needs more — replay builds its timeline from one, pairing each call with
//! its attempt as it happens instead of guessing afterwards.

use super::outcome::{Attempt, FallbackStep};
use super::provider::Target;

/// Told what a run does. Every method has a default that ignores it.
pub trait RunObserver: Send + Sync {
    /// A provider call ended: `failure` is its attempt record, `None` when
    /// it answered. `at` is when it started, on the runner's clock.
    fn call_ended(&self, target: &Target, at: u64, failure: Option<&Attempt>) {
        let _ = (target, at, failure);
    }

    /// A call whose reply kept arriving after the run ended (a stream)
    /// ended: `answered_ms` is how long the call took to start answering.
    /// Told instead of [`RunObserver::call_ended`], which it defaults to.
    fn reply_ended(&self, target: &Target, at: u64, answered_ms: u64, failure: Option<&Attempt>) {
        let _ = answered_ms;
        self.call_ended(target, at, failure);
    }

    /// A candidate was skipped without a call (all profiles blocked, a slow
    /// model).
    fn skipped(&self, attempt: &Attempt) {
        let _ = attempt;
    }

    /// The run moved along its chain, or ended it (F-10.2).
    fn step(&self, step: &FallbackStep) {
        let _ = step;
    }
}

/// Observes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unobserved;

impl RunObserver for Unobserved {}
