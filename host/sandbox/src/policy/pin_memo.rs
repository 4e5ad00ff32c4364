//! `pin-profile` answers kept per module.
//!
//! `pin-profile` takes no clock: its input is the provider's order and the
//! session's pin, and the contract's functions are pure, so the same input
//! has the same answer for as long as the module serves. Sessions of one
//! provider ask it the same few questions over and over (a replay asks it
//! for nearly every request, where it was the largest policy call), so the
//! checked answers are kept, found by a fingerprint of the question and
//! compared in full before one is given (a fingerprint that matches by
//! chance never answers for another question). A swapped-in module starts
//! with none.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

use policy_types::{PinDecision, PinRequest, PinSource};
use rustc_hash::{FxBuildHasher, FxHasher};

/// How many questions are kept: the sessions' distinct pins times the
/// provider's distinct orders in a busy stretch, with room. When full, the
/// oldest kept question makes way.
const KEPT: usize = 256;

/// Kept answers, oldest first from `next` on once the table is full.
#[derive(Debug, Default)]
pub(crate) struct PinMemo {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    kept: Vec<(u64, PinRequest, PinDecision)>,
    /// Where in `kept` the question of each fingerprint is: a replay
    /// misses often (a cooldown's end is part of the question), and
    /// scanning the whole table on each miss cost more than the lookup.
    /// Two questions of one fingerprint keep the later one findable.
    slots: HashMap<u64, usize, FxBuildHasher>,
    /// Where the next answer goes once `kept` is full.
    next: usize,
}

impl PinMemo {
    /// The answer kept for `request`, else `ask`'s, kept when it is `Ok`.
    pub(crate) fn get_or_try<E>(
        &self,
        request: &PinRequest,
        ask: impl FnOnce() -> Result<PinDecision, E>,
    ) -> Result<PinDecision, E> {
        let key = fingerprint(request);
        if let Some(decision) = self.lock().find(key, request) {
            return Ok(decision);
        }
        let decision = ask()?;
        let mut entries = self.lock();
        if entries.find(key, request).is_none() {
            entries.keep(key, request.clone(), decision.clone());
        }
        Ok(decision)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // Plain data, changed in single steps: a poisoned lock is still sound.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entries {
    fn find(&self, key: u64, request: &PinRequest) -> Option<PinDecision> {
        let (_, kept, decision) = self.kept.get(*self.slots.get(&key)?)?;
        (kept == request).then(|| decision.clone())
    }

    fn keep(&mut self, key: u64, request: PinRequest, decision: PinDecision) {
        let slot = if self.kept.len() < KEPT {
            self.kept.push((key, request, decision));
            self.kept.len() - 1
        } else {
            let slot = self.next;
            let old_key = std::mem::replace(&mut self.kept[slot], (key, request, decision)).0;
            if self.slots.get(&old_key) == Some(&slot) {
                self.slots.remove(&old_key);
            }
            self.next = (self.next + 1) % KEPT;
            slot
        };
        self.slots.insert(key, slot);
    }
}

/// A hash of every field of the question.
fn fingerprint(request: &PinRequest) -> u64 {
    let mut hasher = FxHasher::default();
    request.ranked.len().hash(&mut hasher);
    for profile in &request.ranked {
        (&profile.id, profile.available, profile.blocked_until).hash(&mut hasher);
    }
    let source = request.source.map(|source| match source {
        PinSource::Auto => 0u8,
        PinSource::User => 1,
    });
    (
        &request.current,
        source,
        request.pinned_at_compaction,
        request.compaction_count,
        request.session_reset,
    )
        .hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use policy_types::RankedProfile;

    fn request(current: &str, blocked_until: Option<u64>) -> PinRequest {
        PinRequest {
            ranked: vec![
                RankedProfile {
                    id: "openai:a".into(),
                    available: blocked_until.is_none(),
                    blocked_until,
                },
                RankedProfile {
                    id: "openai:b".into(),
                    available: true,
                    blocked_until: None,
                },
            ],
            current: Some(current.into()),
            source: Some(PinSource::Auto),
            pinned_at_compaction: Some(1),
            compaction_count: 2,
            session_reset: false,
        }
    }

    fn decision(profile: &str) -> PinDecision {
        PinDecision {
            profile: Some(profile.into()),
            source: PinSource::Auto,
            compaction_count: 2,
        }
    }

    #[test]
    fn a_question_is_asked_once_and_errors_are_not_kept() {
        let memo = PinMemo::default();
        let mut asked = 0;
        for _ in 0..3 {
            let answer = memo.get_or_try(&request("openai:a", None), || {
                asked += 1;
                Ok::<_, ()>(decision("openai:a"))
            });
            assert_eq!(answer.unwrap(), decision("openai:a"));
        }
        assert_eq!(asked, 1);
        let blocked = request("openai:a", Some(5));
        assert!(memo
            .get_or_try(&blocked, || Err::<PinDecision, _>("no"))
            .is_err());
        let answer = memo.get_or_try(&blocked, || Ok::<_, ()>(decision("openai:b")));
        assert_eq!(answer.unwrap(), decision("openai:b"));
    }

    #[test]
    fn every_field_tells_questions_apart() {
        let base = request("openai:a", None);
        let variants = [
            request("openai:b", None),
            request("openai:a", Some(9)),
            PinRequest {
                source: Some(PinSource::User),
                ..base.clone()
            },
            PinRequest {
                source: None,
                ..base.clone()
            },
            PinRequest {
                pinned_at_compaction: None,
                ..base.clone()
            },
            PinRequest {
                compaction_count: 3,
                ..base.clone()
            },
            PinRequest {
                session_reset: true,
                ..base.clone()
            },
            PinRequest {
                ranked: base.ranked[..1].to_vec(),
                ..base.clone()
            },
        ];
        for variant in &variants {
            assert_ne!(fingerprint(variant), fingerprint(&base), "{variant:?}");
        }
    }

    #[test]
    fn a_matching_fingerprint_never_answers_for_another_question() {
        let memo = PinMemo::default();
        let kept = request("openai:a", None);
        let other = request("openai:b", None);
        // Plant the other question's fingerprint on the kept one.
        memo.lock()
            .keep(fingerprint(&other), kept, decision("openai:a"));
        let answer = memo.get_or_try(&other, || Ok::<_, ()>(decision("openai:b")));
        assert_eq!(answer.unwrap(), decision("openai:b"));
    }

    #[test]
    fn the_oldest_question_makes_way_when_full() {
        let memo = PinMemo::default();
        let nth = |n: usize| request(&format!("openai:{n}"), None);
        for n in 0..=KEPT {
            memo.get_or_try(&nth(n), || Ok::<_, ()>(decision("openai:a")))
                .unwrap();
        }
        let mut asked = false;
        memo.get_or_try(&nth(0), || {
            asked = true;
            Ok::<_, ()>(decision("openai:a"))
        })
        .unwrap();
        assert!(asked, "the oldest was dropped");
        let mut asked_again = false;
        memo.get_or_try(&nth(KEPT), || {
            asked_again = true;
            Ok::<_, ()>(decision("openai:a"))
        })
        .unwrap();
        assert!(!asked_again, "the newest is kept");
    }

    #[test]
    fn after_many_rounds_the_newest_questions_are_all_found() {
        let memo = PinMemo::default();
        let nth = |n: usize| request(&format!("openai:{n}"), None);
        let asked = std::cell::Cell::new(0);
        let ask = |n: usize| {
            memo.get_or_try(&nth(n), || {
                asked.set(asked.get() + 1);
                Ok::<_, ()>(decision(&format!("openai:{n}")))
            })
            .unwrap()
        };
        for n in 0..3 * KEPT + 7 {
            assert_eq!(ask(n), decision(&format!("openai:{n}")));
        }
        let before = asked.get();
        for n in 2 * KEPT + 7..3 * KEPT + 7 {
            assert_eq!(ask(n), decision(&format!("openai:{n}")));
        }
        assert_eq!(asked.get(), before, "the last {KEPT} are all kept");
        ask(0);
        assert_eq!(asked.get(), before + 1, "an early one is asked again");
        assert!(memo.lock().slots.len() <= KEPT);
    }
}
