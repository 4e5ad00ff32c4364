//! Watching a store's routing state and sessions (F-12.4): a recording
//! must capture changes that other processes make to the state this
//! process routes by — a `failover profiles mark` from the command line,
//! another gateway on the same state directory — or replay would decide
//! on a state the live gateway never had.
//!
//! A store with a [`StateWatch`] reports every state it reads and every
//! state this process writes. The watch tells a foreign change from its
//! own by remembering the last few values this process saw or wrote for
//! each profile and session: a read never matches a value in flight
//! between two of its own writes by chance, while a value nobody here
//! wrote is someone else's.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use crate::auth::Usage;

use super::session::SessionEntry;

/// Told what a store reads and what this process writes.
pub trait StateWatch: Send + Sync + std::fmt::Debug {
    /// A profile's routing state as the store holds it now.
    fn usage_seen(&self, profile: &str, usage: &Usage);
    /// This process wrote a profile's routing state.
    fn usage_written(&self, profile: &str, usage: &Usage);
    /// A session as the store holds it now.
    fn session_seen(&self, session: &str, entry: &SessionEntry);
    /// This process wrote a session.
    fn session_written(&self, session: &str, entry: &SessionEntry);
}

/// How many recent values per key tell our own from a foreign change: the
/// value before and after each of a few writes racing a read.
const RECENT: usize = 4;

/// The last values seen or written per key, and the foreign changes found.
#[derive(Debug)]
pub(crate) struct ChangeLog<T> {
    recent: Mutex<HashMap<String, VecDeque<T>>>,
}

impl<T: Clone + PartialEq> ChangeLog<T> {
    /// A log that already knows `initial` (the state a recording starts from).
    pub(crate) fn starting_from(initial: impl IntoIterator<Item = (String, T)>) -> Self {
        let recent = initial
            .into_iter()
            .map(|(key, value)| (key, VecDeque::from([value])))
            .collect();
        ChangeLog {
            recent: Mutex::new(recent),
        }
    }

    /// Whether `value` of `key` is news: a value this process neither saw
    /// nor wrote lately. It is remembered either way.
    pub fn seen(&self, key: &str, value: &T) -> bool {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let values = recent.entry(key.to_owned()).or_default();
        if values.contains(value) {
            return false;
        }
        remember(values, value.clone());
        true
    }

    /// Remembers a value this process wrote.
    pub fn written(&self, key: &str, value: &T) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        remember(recent.entry(key.to_owned()).or_default(), value.clone());
    }
}

fn remember<T>(values: &mut VecDeque<T>, value: T) {
    if values.len() == RECENT {
        values.pop_front();
    }
    values.push_back(value);
}

/// Reports every profile of `usage` to `watch` as seen.
pub(crate) fn report_usage_seen(watch: &dyn StateWatch, usage: &BTreeMap<String, Usage>) {
    for (profile, state) in usage {
        watch.usage_seen(profile, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_values_are_not_news_and_foreign_ones_are() {
        let log = ChangeLog::starting_from([("a".to_owned(), 1)]);
        assert!(!log.seen("a", &1), "the starting state");
        log.written("a", &2);
        assert!(!log.seen("a", &2), "our own write");
        assert!(!log.seen("a", &1), "a read racing our write");
        assert!(log.seen("a", &7), "someone else's");
        assert!(!log.seen("a", &7), "told once");
        assert!(log.seen("b", &1), "a key first seen with a value is news");
    }
}
