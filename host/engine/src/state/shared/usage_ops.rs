//! Profiles' routing state in Redis: read, and changed by compare-and-set
//! (or, while Redis is down, in the local copy).

use std::collections::BTreeMap;

use super::cas::{self, Write};
use super::{merge, AppliedUsage, SharedState, Try, MIN_USAGE_TTL_MS};
use crate::auth::Usage;
use crate::state::shared::Applied;
use crate::state::StateError;
use crate::time::now_ms;

impl SharedState {
    /// The write of profile `id`'s state (`None`: remove it), expiring
    /// once the state is stale.
    pub(super) fn usage_write(
        &self,
        id: &str,
        expected: Option<String>,
        value: Option<&Usage>,
    ) -> Write {
        let ttl_ms = value.map_or(0, |usage| {
            merge::usage_ttl_ms(
                usage,
                self.inner.failure_window_ms,
                now_ms(),
                MIN_USAGE_TTL_MS,
            )
        });
        Write {
            key: self.usage_key(id),
            expected,
            value: value.map(|usage| serde_json::to_string(usage).unwrap_or_default()),
            ttl_ms,
        }
    }

    /// Parsed values of `ids` from their raw values (unreadable ones are
    /// absent).
    fn parse_usage(&self, ids: &[String], raws: &[Option<String>]) -> BTreeMap<String, Usage> {
        ids.iter()
            .zip(raws)
            .filter_map(|(id, raw)| {
                let usage = self.parse(&self.usage_key(id), raw.as_deref()?)?;
                Some((id.clone(), usage))
            })
            .collect()
    }

    /// The routing state of profiles `ids` (those that have any).
    pub fn usage(&self, ids: &[String]) -> BTreeMap<String, Usage> {
        let keys: Vec<String> = ids.iter().map(|id| self.usage_key(id)).collect();
        let Some(raws) = self.call(|c| cas::read(c, &keys)) else {
            let mirror = self.mirror();
            return ids
                .iter()
                .filter_map(|id| Some((id.clone(), mirror.usage.get(id)?.clone())))
                .collect();
        };
        let found = self.parse_usage(ids, &raws);
        let mut mirror = self.mirror();
        for id in ids {
            mirror.saw_usage(id, found.get(id));
        }
        found
    }

    /// Changes the routing state of profiles `ids` atomically across
    /// replicas: `change` gets their current values (those that have any)
    /// and may be called again if another replica changed one meanwhile.
    /// While Redis is down, the change applies to the local copy (in
    /// strict mode it is an error instead).
    pub fn update_usage<T>(
        &self,
        ids: &[String],
        mut change: impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Result<AppliedUsage<T>, StateError> {
        let _serial = self.stripe(ids);
        let mut ids = ids.to_vec();
        self.until_done(|| self.try_update_usage(&mut ids, &mut change))
    }

    fn try_update_usage<T>(
        &self,
        ids: &mut Vec<String>,
        change: &mut impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Try<AppliedUsage<T>> {
        let keys: Vec<String> = ids.iter().map(|id| self.usage_key(id)).collect();
        let Some(raws) = self.call(|c| cas::read(c, &keys)) else {
            return self.update_usage_locally(ids, change);
        };
        let before = self.parse_usage(ids, &raws);
        let mut after = before.clone();
        let result = match change(&mut after) {
            Ok(result) => result,
            Err(error) => return Try::Done(Err(error)),
        };
        let added: Vec<String> = after
            .keys()
            .filter(|id| !ids.contains(id))
            .cloned()
            .collect();
        if !added.is_empty() {
            // Ids it was not asked about: read them too, then decide again.
            ids.extend(added);
            return Try::Again;
        }
        let writes: Vec<Write> = ids
            .iter()
            .zip(raws)
            .filter(|(id, _)| before.get(*id) != after.get(*id))
            .map(|(id, raw)| self.usage_write(id, raw, after.get(id)))
            .collect();
        match self.call(|c| cas::compare_and_set(c, &writes)) {
            Some(true) => {
                let mut mirror = self.mirror();
                for id in ids.iter() {
                    mirror.saw_usage(id, after.get(id));
                }
                Try::Done(Ok(Applied {
                    result,
                    before,
                    after,
                }))
            }
            Some(false) => Try::Again,
            // Whether it was applied is unknown: apply it locally too; the
            // merge rule counts nothing twice.
            None => self.update_usage_locally(ids, change),
        }
    }

    /// `change` on the local copy, marked for reconciliation; again when
    /// Redis came back meanwhile.
    fn update_usage_locally<T>(
        &self,
        ids: &[String],
        change: &mut impl FnMut(&mut BTreeMap<String, Usage>) -> Result<T, StateError>,
    ) -> Try<AppliedUsage<T>> {
        if self.inner.strict {
            return Try::Done(Err(self.unreachable()));
        }
        let mut mirror = self.mirror();
        if self.inner.health.is_up() {
            return Try::Again;
        }
        let before: BTreeMap<String, Usage> = ids
            .iter()
            .filter_map(|id| Some((id.clone(), mirror.usage.get(id)?.clone())))
            .collect();
        let mut after = before.clone();
        let result = match change(&mut after) {
            Ok(result) => result,
            Err(error) => return Try::Done(Err(error)),
        };
        let touched: Vec<String> = before.keys().chain(after.keys()).cloned().collect();
        for id in touched {
            if before.get(&id) == after.get(&id) {
                continue;
            }
            match after.get(&id) {
                Some(usage) => mirror.usage.insert(id.clone(), usage.clone()),
                None => mirror.usage.remove(&id),
            };
            mirror.dirty_usage.insert(id);
        }
        Try::Done(Ok(Applied {
            result,
            before,
            after,
        }))
    }
}
