//! Bringing Redis up to date when it answers again: every local change
//! made during the outage is merged into it ([`super::merge`]), and so is
//! every cooldown or disable still open that this replica knew of — a
//! Redis restarted without persistence comes back empty, and the outage
//! must not reopen a key that is out of credit.
//!
//! The merging runs without holding the local copy (requests go on being
//! served from it meanwhile), in passes: a change made during a pass is
//! merged by the next, and the last pass holds the copy, so that nothing
//! changed locally is left behind when Redis is marked up.

use redis::{Connection, RedisResult};

use super::cas;
use super::merge;
use super::mirror::{Mirror, StoredSession};
use super::{contended, SharedState, MAX_CAS_ATTEMPTS};
use crate::auth::Usage;
use crate::time::now_ms;

/// Passes over the local changes without holding the copy, before the
/// last one that holds it: changes keep arriving only while requests are
/// served during the merge, and each pass has fewer to do.
const UNLOCKED_PASSES: usize = 3;

/// The local state one pass pushes.
struct Work {
    /// Changed profiles (`None`: removed), and open windows known before.
    usage: Vec<(String, Option<Usage>)>,
    /// Changed sessions.
    sessions: Vec<(String, StoredSession)>,
}

impl Work {
    fn of(mirror: &Mirror, restore_windows: bool, now: u64) -> Work {
        let mut usage: Vec<(String, Option<Usage>)> = mirror
            .dirty_usage
            .iter()
            .map(|id| (id.clone(), mirror.usage.get(id).cloned()))
            .collect();
        if restore_windows {
            let open = mirror.usage.iter().filter(|(id, usage)| {
                !mirror.dirty_usage.contains(*id)
                    && usage.last_window_end().is_some_and(|until| until > now)
            });
            usage.extend(open.map(|(id, usage)| (id.clone(), Some(usage.clone()))));
        }
        let sessions = mirror
            .dirty_sessions
            .iter()
            .filter_map(|id| Some((id.clone(), mirror.sessions.get(id)?.clone())))
            .collect();
        Work { usage, sessions }
    }

    fn is_empty(&self) -> bool {
        self.usage.is_empty() && self.sessions.is_empty()
    }
}

/// What Redis holds after a pass, in the order of its [`Work`].
struct Settled {
    usage: Vec<Option<Usage>>,
    sessions: Vec<StoredSession>,
}

impl SharedState {
    /// Merges the local changes into Redis, then marks it up. Returns how
    /// many entries were merged.
    pub(super) fn reconcile(&self) -> Result<usize, String> {
        let mut connection = self.inner.pool.get(true)?;
        let mut merged = 0;
        for pass in 0..UNLOCKED_PASSES {
            let work = Work::of(&self.mirror(), pass == 0, now_ms());
            if work.is_empty() {
                break;
            }
            let settled = self
                .push(&mut connection, &work)
                .map_err(|e| e.to_string())?;
            merged += settle(&mut self.mirror(), &work, &settled);
        }
        let mut mirror = self.mirror();
        let work = Work::of(&mirror, false, now_ms());
        let settled = self
            .push(&mut connection, &work)
            .map_err(|e| e.to_string())?;
        merged += settle(&mut mirror, &work, &settled);
        // Under the copy's lock: a change made from now on sees Redis up
        // and goes there.
        self.inner.health.recovered();
        Ok(merged)
    }

    fn push(&self, connection: &mut Connection, work: &Work) -> RedisResult<Settled> {
        let mut usage = Vec::with_capacity(work.usage.len());
        for (id, local) in &work.usage {
            usage.push(self.merge_into_redis(connection, id, local.as_ref())?);
        }
        let mut sessions = Vec::with_capacity(work.sessions.len());
        for (id, local) in &work.sessions {
            sessions.push(self.merge_session_into_redis(connection, id, local)?);
        }
        Ok(Settled { usage, sessions })
    }

    /// Writes `local` merged with Redis's value of profile `id` (a local
    /// removal removes it); returns what Redis then holds.
    fn merge_into_redis(
        &self,
        connection: &mut Connection,
        id: &str,
        local: Option<&Usage>,
    ) -> RedisResult<Option<Usage>> {
        let key = self.usage_key(id);
        for _ in 0..MAX_CAS_ATTEMPTS {
            let raw = cas::read(connection, std::slice::from_ref(&key))?
                .pop()
                .flatten();
            // A value that does not parse is replaced by the local one.
            let remote: Option<Usage> = raw.as_deref().and_then(|r| serde_json::from_str(r).ok());
            let merged = match (local, &remote) {
                (None, _) => None,
                (Some(local), Some(remote)) => Some(merge::merge_usage(remote, local)),
                (Some(local), None) => Some(local.clone()),
            };
            if merged == remote && (raw.is_some() || merged.is_none()) {
                return Ok(merged);
            }
            let write = self.usage_write(id, raw, merged.as_ref());
            if cas::compare_and_set(connection, &[write])? {
                return Ok(merged);
            }
        }
        Err(contended())
    }

    /// Writes a session changed locally unless Redis holds a later write
    /// of it; when Redis's changed since the local change began, the two
    /// are merged, a person's choices kept. Returns what Redis then holds.
    fn merge_session_into_redis(
        &self,
        connection: &mut Connection,
        id: &str,
        local: &StoredSession,
    ) -> RedisResult<StoredSession> {
        let key = self.session_key(id);
        for _ in 0..MAX_CAS_ATTEMPTS {
            let raw = cas::read(connection, std::slice::from_ref(&key))?
                .pop()
                .flatten();
            let remote = raw
                .as_deref()
                .and_then(|r| serde_json::from_str::<StoredSession>(r).ok());
            let wanted = match &remote {
                Some(remote) if remote.at > local.at => return Ok(remote.clone()),
                Some(remote) if local.base != Some(remote.at) => StoredSession {
                    at: local.at,
                    entry: merge::merge_session(&remote.entry, &local.entry),
                    base: None,
                },
                _ => StoredSession {
                    base: None,
                    ..local.clone()
                },
            };
            if cas::compare_and_set(connection, &[self.session_write(id, raw, &wanted)])? {
                return Ok(wanted);
            }
        }
        Err(contended())
    }
}

/// Records a pass's outcome in the copy: an entry is clean again unless it
/// changed locally during the pass (the next pass takes it). Returns how
/// many changed entries were settled.
fn settle(mirror: &mut Mirror, work: &Work, settled: &Settled) -> usize {
    let mut count = 0;
    for ((id, local), there) in work.usage.iter().zip(&settled.usage) {
        if mirror.usage.get(id) != local.as_ref() {
            continue;
        }
        count += usize::from(mirror.dirty_usage.remove(id));
        mirror.saw_usage(id, there.as_ref());
    }
    for ((id, local), there) in work.sessions.iter().zip(&settled.sessions) {
        if mirror.sessions.get(id) != Some(local) {
            continue;
        }
        count += usize::from(mirror.dirty_sessions.remove(id));
        mirror.saw_session(id, Some(there));
    }
    count
}
