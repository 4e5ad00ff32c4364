//! The provider of a replay: answers each call from the recording.
//!
//! A call is answered, in this order, by
//! 1. **recorded** — the next unused outcome of the same request for the
//!    same provider, model and profile (what the original run saw);
//! 2. **covered** — otherwise the outcome of that provider, model and
//!    profile recorded nearest in time, within [`COVER_WINDOW_MS`] (a
//!    policy that calls something the original run did not still gets
//!    what that endpoint was doing then);
//! 3. **unrecorded** — otherwise as `--unrecorded` says: a success, or a
//!    failure that names the missing call.
//!
//! The virtual clock moves by the recorded latency of each answer.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::provider_error::ProviderError;
use crate::runner::{CallError, Provider, Target, VirtualClock};

use super::trace::OutcomeEvent;

/// How far from a call a recorded outcome of the same target still
/// answers it: rate limits and overloads last about this long.
pub const COVER_WINDOW_MS: u64 = 60_000;

/// What an unrecorded call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Unrecorded {
    /// A failure ("no recorded outcome …"), which the policy classifies.
    #[default]
    Error,
    /// A success.
    Success,
}

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Answered {
    Recorded,
    Covered,
    Unrecorded,
}

/// One call of the replay.
#[derive(Debug, Clone)]
pub struct Call {
    pub request: u64,
    pub at: u64,
    pub target: Target,
    pub answered: Answered,
    pub ok: bool,
}

/// Answers calls from a recording.
pub struct ReplayProvider {
    outcomes: Vec<OutcomeEvent>,
    used: Mutex<HashSet<usize>>,
    clock: VirtualClock,
    unrecorded: Unrecorded,
    calls: Mutex<Vec<Call>>,
}

impl ReplayProvider {
    pub fn new(outcomes: Vec<OutcomeEvent>, clock: VirtualClock, unrecorded: Unrecorded) -> Self {
        ReplayProvider {
            outcomes,
            used: Mutex::new(HashSet::new()),
            clock,
            unrecorded,
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many calls so far.
    pub fn call_count(&self) -> usize {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn same_target(outcome: &OutcomeEvent, target: &Target) -> bool {
        outcome.provider == target.provider
            && outcome.model == target.model
            && outcome.profile == target.profile
    }

    fn find(&self, request: u64, target: &Target, now: u64) -> Option<(usize, Answered)> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let recorded = self
            .outcomes
            .iter()
            .enumerate()
            .find(|(i, o)| o.request == request && !used.contains(i) && Self::same_target(o, target));
        if let Some((index, _)) = recorded {
            used.insert(index);
            return Some((index, Answered::Recorded));
        }
        self.outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| Self::same_target(o, target) && o.at.abs_diff(now) <= COVER_WINDOW_MS)
            .min_by_key(|(_, o)| (o.at.abs_diff(now), o.at))
            .map(|(index, _)| (index, Answered::Covered))
    }
}

impl Provider for ReplayProvider {
    /// The id of the recorded request being replayed.
    type Request = u64;
    type Reply = ();

    async fn call(&self, target: &Target, request: &u64) -> Result<(), CallError> {
        use crate::runner::Clock;
        let now = self.clock.now_ms();
        let found = self.find(*request, target, now);
        let (result, answered) = match found {
            Some((index, answered)) => {
                let outcome = &self.outcomes[index];
                self.clock.advance(outcome.latency_ms);
                let result = match outcome.failure() {
                    None => Ok(()),
                    Some(Ok(error)) => Err(CallError::Failed(Box::new(error))),
                    // Checked when the trace was read.
                    Some(Err(e)) => Err(CallError::Failed(Box::new(ProviderError::message(e.to_string())))),
                };
                (result, answered)
            }
            None => {
                let result = match self.unrecorded {
                    Unrecorded::Success => Ok(()),
                    Unrecorded::Error => Err(CallError::Failed(Box::new(
                        ProviderError::message(format!(
                            "replay: no recorded outcome for {} via {}",
                            target.model, target.profile
                        ))
                        .with_provider(target.provider.clone()),
                    ))),
                };
                (result, Answered::Unrecorded)
            }
        };
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).push(Call {
            request: *request,
            at: now,
            target: target.clone(),
            answered,
            ok: result.is_ok(),
        });
        result
    }
}
