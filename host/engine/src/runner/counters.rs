//! What went wrong around served replies, counted for the status report:
//! failures that did not fail the request (the answer was served) but that
//! an operator must see.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Value};

/// Counts since the runner started.
#[derive(Debug, Default)]
pub struct Counters {
    /// The policy trapped or refused while recording a success: the answer
    /// was served, the profile's success not recorded.
    policy_errors_after_success: AtomicU64,
    /// The state could not be written after a success.
    state_errors_after_success: AtomicU64,
    /// Streams that broke after their first content (recorded against the
    /// profile).
    streams_broken: AtomicU64,
}

/// A point-in-time copy of [`Counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterValues {
    /// Successes whose recording the policy trapped on or refused.
    pub policy_errors_after_success: u64,
    /// Successes whose state could not be written.
    pub state_errors_after_success: u64,
    /// Streams that broke after their first content.
    pub streams_broken: u64,
}

impl Counters {
    pub(crate) fn policy_error_after_success(&self) {
        self.policy_errors_after_success
            .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn state_error_after_success(&self) {
        self.state_errors_after_success
            .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stream_broken(&self) {
        self.streams_broken.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn values(&self) -> CounterValues {
        CounterValues {
            policy_errors_after_success: self.policy_errors_after_success.load(Ordering::Relaxed),
            state_errors_after_success: self.state_errors_after_success.load(Ordering::Relaxed),
            streams_broken: self.streams_broken.load(Ordering::Relaxed),
        }
    }
}

impl CounterValues {
    /// The status report's `counters` object.
    pub fn to_json(self) -> Value {
        json!({
            "policyErrorsAfterSuccess": self.policy_errors_after_success,
            "stateErrorsAfterSuccess": self.state_errors_after_success,
            "streamsBrokenAfterStart": self.streams_broken,
        })
    }
}
