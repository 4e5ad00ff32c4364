//! Sessions in Redis: read, changed by compare-and-set, reconciled by
//! their write time, moved whole by a migration.

use std::collections::BTreeMap;

use redis::{Connection, RedisResult};

use super::cas::{self, Write};
use super::mirror::{Mirror, StoredSession};
use super::{contended, Applied, SharedState, MAX_CAS_ATTEMPTS};
use crate::runner::clock::now_ms;
use crate::state::{SessionEntry, StateError};

impl SharedState {
    fn parse_session(&self, id: &str, raw: &str) -> Result<StoredSession, StateError> {
        serde_json::from_str(raw).map_err(|e| self.corrupt(&self.session_key(id), &e))
    }

    fn session_write(&self, id: &str, expected: Option<String>, stored: &StoredSession) -> Write {
        Write {
            key: self.session_key(id),
            expected,
            value: Some(serde_json::to_string(stored).unwrap_or_default()),
            ttl_ms: 0,
        }
    }

    /// Session `id`, if it has been written.
    pub fn session(&self, id: &str) -> Result<Option<SessionEntry>, StateError> {
        let key = self.session_key(id);
        let Some(raw) = self.call(|c| cas::read(c, std::slice::from_ref(&key))) else {
            return Ok(self.mirror().sessions.get(id).map(|s| s.entry.clone()));
        };
        let stored = match raw.into_iter().next().flatten() {
            Some(raw) => Some(self.parse_session(id, &raw)?),
            None => None,
        };
        self.mirror().saw_session(id, stored.as_ref());
        Ok(stored.map(|s| s.entry))
    }

    /// Every session of the agent (while Redis is down, those the local
    /// copy holds).
    pub fn sessions(&self) -> Result<BTreeMap<String, SessionEntry>, StateError> {
        let listed = self.call(|c| {
            let prefix = format!("{}session:", self.inner.base);
            let keys = cas::scan(c, &format!("{}*", cas::glob_escape(&prefix)))?;
            let raws = cas::read(c, &keys)?;
            Ok(keys
                .into_iter()
                .zip(raws)
                .filter_map(|(key, raw)| Some((key.strip_prefix(&prefix)?.to_owned(), raw?)))
                .collect::<Vec<_>>())
        });
        let Some(listed) = listed else {
            let mirror = self.mirror();
            return Ok(mirror
                .sessions
                .iter()
                .map(|(id, s)| (id.clone(), s.entry.clone()))
                .collect());
        };
        listed
            .into_iter()
            .map(|(id, raw)| Ok((id.clone(), self.parse_session(&id, &raw)?.entry)))
            .collect()
    }

    /// Changes session `id` atomically across replicas. `change` may be
    /// called again if another replica changed it meanwhile. A change that
    /// changes nothing writes nothing (`after` is then `None`).
    pub fn update_session<T>(
        &self,
        id: &str,
        mut change: impl FnMut(&mut SessionEntry) -> T,
    ) -> Result<Applied<T, Option<SessionEntry>>, StateError> {
        let _serial = self.inner.updates.lock().unwrap_or_else(|e| e.into_inner());
        let key = self.session_key(id);
        for _ in 0..MAX_CAS_ATTEMPTS {
            let Some(raw) = self.call(|c| cas::read(c, std::slice::from_ref(&key))) else {
                match self.update_session_locally(id, &mut change) {
                    Some(applied) => return Ok(applied),
                    None => continue,
                }
            };
            let raw = raw.into_iter().next().flatten();
            let before = match &raw {
                Some(raw) => Some(self.parse_session(id, raw)?.entry),
                None => None,
            };
            let mut entry = before.clone().unwrap_or_default();
            let result = change(&mut entry);
            if before.as_ref().unwrap_or(&SessionEntry::default()) == &entry {
                return Ok(Applied {
                    result,
                    before,
                    after: None,
                });
            }
            let stored = StoredSession {
                at: now_ms(),
                entry,
            };
            let write = self.session_write(id, raw, &stored);
            match self.call(|c| cas::compare_and_set(c, &[write])) {
                Some(true) => {
                    self.mirror().saw_session(id, Some(&stored));
                    return Ok(Applied {
                        result,
                        before,
                        after: Some(stored.entry),
                    });
                }
                Some(false) => {}
                None => {
                    if let Some(applied) = self.update_session_locally(id, &mut change) {
                        return Ok(applied);
                    }
                }
            }
        }
        Err(StateError::Store {
            store: self.url().to_owned(),
            message: contended().to_string(),
        })
    }

    /// `change` on the local copy of session `id`, marked for
    /// reconciliation; `None` when Redis came back meanwhile.
    fn update_session_locally<T>(
        &self,
        id: &str,
        change: &mut impl FnMut(&mut SessionEntry) -> T,
    ) -> Option<Applied<T, Option<SessionEntry>>> {
        let mut mirror = self.mirror();
        if self.inner.health.is_up() {
            return None;
        }
        let before = mirror.sessions.get(id).map(|s| s.entry.clone());
        let mut entry = before.clone().unwrap_or_default();
        let result = change(&mut entry);
        if before.as_ref().unwrap_or(&SessionEntry::default()) == &entry {
            return Some(Applied {
                result,
                before,
                after: None,
            });
        }
        let stored = StoredSession {
            at: now_ms(),
            entry: entry.clone(),
        };
        mirror.sessions.insert(id.to_owned(), stored);
        mirror.dirty_sessions.insert(id.to_owned());
        Some(Applied {
            result,
            before,
            after: Some(entry),
        })
    }

    /// Writes each locally changed session unless Redis holds a later
    /// write of it. Returns how many were reconciled.
    pub(super) fn reconcile_sessions(
        &self,
        connection: &mut Connection,
        mirror: &mut Mirror,
    ) -> RedisResult<usize> {
        let dirty: Vec<String> = mirror.dirty_sessions.iter().cloned().collect();
        for id in &dirty {
            let Some(local) = mirror.sessions.get(id).cloned() else {
                mirror.dirty_sessions.remove(id);
                continue;
            };
            let key = self.session_key(id);
            let mut settled = None;
            for _ in 0..MAX_CAS_ATTEMPTS {
                let raw = cas::read(connection, std::slice::from_ref(&key))?
                    .pop()
                    .flatten();
                let remote: Option<StoredSession> =
                    raw.as_deref().and_then(|r| serde_json::from_str(r).ok());
                if let Some(remote) = remote.filter(|remote| remote.at > local.at) {
                    settled = Some(remote);
                    break;
                }
                if cas::compare_and_set(connection, &[self.session_write(id, raw, &local)])? {
                    settled = Some(local.clone());
                    break;
                }
            }
            let settled = settled.ok_or_else(contended)?;
            mirror.dirty_sessions.remove(id);
            mirror.saw_session(id, Some(&settled));
        }
        Ok(dirty.len())
    }

    /// Every session, straight from Redis.
    pub(super) fn export_sessions(
        &self,
        connection: &mut Connection,
    ) -> Result<BTreeMap<String, SessionEntry>, StateError> {
        let ids = self.ids_under(connection, "session:")?;
        let keys: Vec<String> = ids.iter().map(|id| self.session_key(id)).collect();
        let raws = cas::read(connection, &keys).map_err(|e| self.store_error(e))?;
        let mut sessions = BTreeMap::new();
        for (id, raw) in ids.into_iter().zip(raws) {
            if let Some(raw) = raw {
                let entry = self.parse_session(&id, &raw)?.entry;
                sessions.insert(id, entry);
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
            };
            let write = self.session_write(id, None, &stored);
            pipe.cmd("SET")
                .arg(&write.key)
                .arg(write.value.unwrap_or_default())
                .ignore();
        }
    }
}
