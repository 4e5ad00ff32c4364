//! The local copy of the shared state: the last values this replica read
//! or wrote, and the changes it made while Redis was unreachable.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::auth::Usage;
use crate::state::SessionEntry;

/// Clean sessions kept at most: the copy only has to carry the sessions
/// being served through an outage; past this, clean ones are dropped (the
/// changed ones are always kept until reconciled).
const SESSIONS_KEPT: usize = 10_000;

/// A session as Redis holds it: the entry and when it was written, so that
/// reconciling keeps the later of two writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct StoredSession {
    /// When it was written, ms since the epoch.
    pub at: u64,
    /// The entry.
    pub entry: SessionEntry,
    /// For a local change made while Redis was down: the `at` of the
    /// Redis value it was made from (`None`: made from nothing). Not
    /// stored in Redis.
    #[serde(skip)]
    pub base: Option<u64>,
}

/// The copy.
#[derive(Debug, Default)]
pub(super) struct Mirror {
    /// Routing state by profile id.
    pub usage: HashMap<String, Usage>,
    /// Profiles changed locally and not yet reconciled (a missing value
    /// is a removal).
    pub dirty_usage: BTreeSet<String>,
    /// Sessions by id.
    pub sessions: HashMap<String, StoredSession>,
    /// Sessions changed locally and not yet reconciled.
    pub dirty_sessions: BTreeSet<String>,
}

impl Mirror {
    /// Remembers what Redis holds for `id`, unless a local change of it
    /// is waiting to be reconciled.
    pub(crate) fn saw_usage(&mut self, id: &str, usage: Option<&Usage>) {
        if self.dirty_usage.contains(id) {
            return;
        }
        match usage {
            Some(usage) => {
                self.usage.insert(id.to_owned(), usage.clone());
            }
            None => {
                self.usage.remove(id);
            }
        }
    }

    /// Remembers what Redis holds for session `id` (same rule).
    pub(crate) fn saw_session(&mut self, id: &str, stored: Option<&StoredSession>) {
        if self.dirty_sessions.contains(id) {
            return;
        }
        match stored {
            Some(stored) => {
                if self.sessions.len() >= SESSIONS_KEPT && !self.sessions.contains_key(id) {
                    let dirty = &self.dirty_sessions;
                    self.sessions.retain(|id, _| dirty.contains(id));
                }
                self.sessions.insert(id.to_owned(), stored.clone());
            }
            None => {
                self.sessions.remove(id);
            }
        }
    }

    /// Changes not yet reconciled.
    pub fn pending(&self) -> usize {
        self.dirty_usage.len() + self.dirty_sessions.len()
    }
}
