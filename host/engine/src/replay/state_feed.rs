//! Changes other processes made while traffic was recorded (F-12.4), fed
//! into the replay's scratch state when the virtual clock reaches them: a
//! `failover profiles mark` from the command line, another gateway on the
//! same state. Without them replay would decide on a state the live
//! gateway never had, and report no divergence where there was one.

use std::sync::Mutex;

use crate::state::{AuthStore, SessionStore, StateError};

use super::trace::{StateChange, StateEvent};

/// The recorded changes, applied in time order.
pub(crate) struct StateFeed {
    /// By time, then file order.
    events: Vec<StateEvent>,
    /// How many have been applied, and those not yet reported.
    progress: Mutex<Progress>,
    store: AuthStore,
    sessions: SessionStore,
}

#[derive(Default)]
struct Progress {
    applied: usize,
    unreported: Vec<StateEvent>,
}

impl StateFeed {
    /// A feed of `events` into `store` and `sessions`.
    pub fn new(mut events: Vec<StateEvent>, store: AuthStore, sessions: SessionStore) -> Self {
        // A stable sort keeps the file's order among changes of one instant.
        events.sort_by_key(|e| e.at);
        StateFeed {
            events,
            progress: Mutex::new(Progress::default()),
            store,
            sessions,
        }
    }

    /// Applies every change made at or before `now`.
    pub(crate) fn catch_up(&self, now: u64) -> Result<(), StateError> {
        let mut progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(event) = self.events.get(progress.applied).filter(|e| e.at <= now) {
            match &event.change {
                StateChange::Profile { profile, usage } => {
                    self.store.update_usage(|all| {
                        all.insert(profile.clone(), usage.clone());
                        Ok(())
                    })?;
                }
                StateChange::Session { session, entry } => {
                    self.sessions.update(session, |e| *e = entry.clone())?;
                }
            }
            progress.unreported.push(event.clone());
            progress.applied += 1;
        }
        Ok(())
    }

    /// The changes applied since the last call, in order.
    pub(crate) fn take_applied(&self) -> Vec<StateEvent> {
        std::mem::take(
            &mut self
                .progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .unreported,
        )
    }
}
