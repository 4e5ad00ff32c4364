//! Sessions in Redis: read, changed by compare-and-set (or, while Redis is
//! down, in the local copy), moved whole by a migration.

use std::collections::BTreeMap;

use redis::Connection;

use super::cas::{self, Write};
use super::mirror::StoredSession;
use super::{Applied, SharedState, Try};
use crate::state::{SessionEntry, StateError};
use crate::time::now_ms;

/// A session change as applied (`after`: `None` when nothing was written).
pub(crate) type AppliedSession<T> = Applied<T, Option<SessionEntry>>;

/// What applying a change to a session came to.
type Changed<T> = (T, Option<SessionEntry>, SessionEntry);

/// `change` applied to a copy of `before` (or of an empty entry): its
/// result, `before` and the new entry — or, when it changed nothing, the
/// change as applied (nothing to write).
// Returned once and matched at once: boxing it would add an allocation to
// the common case of a change that changes nothing.
#[allow(clippy::result_large_err)]
fn apply<T>(
    before: Option<SessionEntry>,
    change: &mut impl FnMut(&mut SessionEntry) -> T,
) -> Result<Changed<T>, AppliedSession<T>> {
    let mut entry = before.clone().unwrap_or_default();
    let result = change(&mut entry);
    if before.as_ref().unwrap_or(&SessionEntry::default()) == &entry {
        let after = None;
        return Err(Applied {
            result,
            before,
            after,
        });
    }
    Ok((result, before, entry))
}

impl SharedState {
    pub(super) fn session_write(
        &self,
        id: &str,
        expected: Option<String>,
        stored: &StoredSession,
    ) -> Write {
        Write {
            key: self.session_key(id),
            expected,
            value: Some(serde_json::to_string(stored).unwrap_or_default()),
            ttl_ms: 0,
        }
    }

    /// A stored session from its raw value (`None`: absent or unreadable).
    pub(super) fn parse_session(&self, id: &str, raw: Option<&str>) -> Option<StoredSession> {
        self.parse(&self.session_key(id), raw?)
    }

    /// Session `id`, if it has been written.
    pub fn session(&self, id: &str) -> Option<SessionEntry> {
        let key = self.session_key(id);
        let Some(raw) = self.call(|c| cas::read(c, std::slice::from_ref(&key))) else {
            return self.mirror().sessions.get(id).map(|s| s.entry.clone());
        };
        let stored = self.parse_session(id, raw.into_iter().next().flatten().as_deref());
        self.mirror().saw_session(id, stored.as_ref());
        stored.map(|s| s.entry)
    }

    /// Every session of the agent (while Redis is down, those the local
    /// copy holds).
    pub fn sessions(&self) -> BTreeMap<String, SessionEntry> {
        let prefix = format!("{}session:", self.inner.base);
        let listed = self.call(|c| {
            let keys = cas::scan(c, &format!("{}*", cas::glob_escape(&prefix)))?;
            let raws = cas::read(c, &keys)?;
            Ok(keys.into_iter().zip(raws).collect::<Vec<_>>())
        });
        let Some(listed) = listed else {
            let mirror = self.mirror();
            return mirror
                .sessions
                .iter()
                .map(|(id, s)| (id.clone(), s.entry.clone()))
                .collect();
        };
        listed
            .into_iter()
            .filter_map(|(key, raw)| {
                let id = key.strip_prefix(&prefix)?;
                let stored = self.parse_session(id, raw.as_deref())?;
                Some((id.to_owned(), stored.entry))
            })
            .collect()
    }

    /// Changes session `id` atomically across replicas. `change` may be
    /// called again if another replica changed it meanwhile. A change that
    /// changes nothing writes nothing (`after` is then `None`).
    pub(crate) fn update_session<T>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut SessionEntry) -> T,
    ) -> Result<AppliedSession<T>, StateError> {
        let key = self.session_key(id);
        let _serial = self.stripe(std::slice::from_ref(&key));
        self.until_done(|| self.try_update_session(id, &key, &mut change))
    }

    fn try_update_session<T>(
        &self,
        id: &str,
        key: &str,
        change: &mut impl FnMut(&mut SessionEntry) -> T,
    ) -> Try<AppliedSession<T>> {
        let keys = [key.to_owned()];
        let Some(raw) = self.call(|c| cas::read(c, &keys)) else {
            return self.update_session_locally(id, change);
        };
        let raw = raw.into_iter().next().flatten();
        let before = self.parse_session(id, raw.as_deref()).map(|s| s.entry);
        let (result, before, entry) = match apply(before, change) {
            Ok(changed) => changed,
            Err(unchanged) => return Try::Done(Ok(unchanged)),
        };
        let stored = StoredSession {
            at: now_ms(),
            entry,
            base: None,
        };
        let write = self.session_write(id, raw, &stored);
        match self.call(|c| cas::compare_and_set(c, std::slice::from_ref(&write))) {
            Some(true) => {
                self.mirror().saw_session(id, Some(&stored));
                Try::Done(Ok(Applied {
                    result,
                    before,
                    after: Some(stored.entry),
                }))
            }
            Some(false) => Try::Again,
            None => self.update_session_locally(id, change),
        }
    }

    /// `change` on the local copy of session `id`, marked for
    /// reconciliation; again when Redis came back meanwhile.
    fn update_session_locally<T>(
        &self,
        id: &str,
        change: &mut impl FnMut(&mut SessionEntry) -> T,
    ) -> Try<AppliedSession<T>> {
        if self.inner.strict {
            return Try::Done(Err(self.unreachable()));
        }
        let mut mirror = self.mirror();
        if self.inner.health.is_up() {
            return Try::Again;
        }
        let known = mirror.sessions.get(id);
        let before = known.map(|s| s.entry.clone());
        // What Redis held when the local changes began (see reconcile).
        let base = match known {
            Some(stored) if mirror.dirty_sessions.contains(id) => stored.base,
            Some(stored) => Some(stored.at),
            None => None,
        };
        let (result, before, entry) = match apply(before, change) {
            Ok(changed) => changed,
            Err(unchanged) => return Try::Done(Ok(unchanged)),
        };
        let stored = StoredSession {
            at: now_ms(),
            entry: entry.clone(),
            base,
        };
        mirror.sessions.insert(id.to_owned(), stored);
        mirror.dirty_sessions.insert(id.to_owned());
        Try::Done(Ok(Applied {
            result,
            before,
            after: Some(entry),
        }))
    }

    /// Every session, straight from Redis (unreadable ones are errors).
    pub(super) fn export_sessions(
        &self,
        connection: &mut Connection,
    ) -> Result<BTreeMap<String, SessionEntry>, StateError> {
        let ids = self.ids_under(connection, "session:")?;
        let keys: Vec<String> = ids.iter().map(|id| self.session_key(id)).collect();
        let raws = cas::read(connection, &keys).map_err(|e| self.store_error(e))?;
        let mut sessions = BTreeMap::new();
        for ((id, key), raw) in ids.into_iter().zip(&keys).zip(raws) {
            if let Some(raw) = raw {
                let stored: StoredSession = self.parse_strict(key, &raw)?;
                sessions.insert(id, stored.entry);
            }
        }
        Ok(sessions)
    }

    /// Adds the writes of `sessions` to `pipe`.
    pub(super) fn import_sessions(
        &self,
        pipe: &mut redis::Pipeline,
        sessions: &BTreeMap<String, SessionEntry>,
    ) {
        let at = now_ms();
        for (id, entry) in sessions {
            let stored = StoredSession {
                at,
                entry: entry.clone(),
                base: None,
            };
            let write = self.session_write(id, None, &stored);
            pipe.cmd("SET")
                .arg(&write.key)
                .arg(write.value.unwrap_or_default())
                .ignore();
        }
    }
}
