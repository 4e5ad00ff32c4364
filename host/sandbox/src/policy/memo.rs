//! Answers kept by their inputs.
//!
//! The contract's functions are pure: the same input gives the same answer
//! (no clock but `now-ms`, no randomness, nothing kept between calls). So
//! a checked answer can be given again for the same input without asking
//! the module. Two kinds of input repeat:
//!
//! - inputs without a clock (`plan-run` without a session override,
//!   `pin-profile`, `next-step`): a gateway asks the same question for
//!   every request of a model, so a few dozen are kept;
//! - inputs with the clock in milliseconds (an error, an order, a
//!   candidate, a profile's bookkeeping, a model's health): a busy gateway
//!   serves many requests in one millisecond with the same state, so the
//!   last few are kept.
//!
//! Answers are kept per module (a swapped-in module starts empty) and found
//! by a fingerprint of the whole input, then by equality.

use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};

/// How many inputs without a clock are kept: a gateway's models and their
/// selection sources, with room.
pub(crate) const TIMELESS: usize = 64;

/// How many clocked inputs are kept: the requests of one millisecond on
/// the busiest models, few enough that a look-up stays a short scan.
pub(crate) const RECENT: usize = 16;

/// Checked answers by input, at most `N`; the oldest goes first.
#[derive(Debug)]
pub(crate) struct Memo<K, V, const N: usize = TIMELESS> {
    slots: Mutex<Slots<K, V>>,
}

#[derive(Debug)]
struct Slots<K, V> {
    entries: Vec<(u64, K, V)>,
    /// The entry the next new answer replaces once full.
    next: usize,
}

impl<K, V, const N: usize> Default for Memo<K, V, N> {
    fn default() -> Self {
        Memo {
            slots: Mutex::new(Slots {
                entries: Vec::new(),
                next: 0,
            }),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone, const N: usize> Memo<K, V, N> {
    /// The answer kept for `key`, else `compute`'s, kept when it is `Ok`.
    pub(crate) fn get_or_try<E>(
        &self,
        key: &K,
        compute: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let print = fingerprint(key);
        if let Some(value) = self.find(print, key) {
            return Ok(value);
        }
        let value = compute()?;
        let mut slots = self.lock();
        if !slots
            .entries
            .iter()
            .any(|(p, k, _)| *p == print && k == key)
        {
            let entry = (print, key.clone(), value.clone());
            if slots.entries.len() < N {
                slots.entries.push(entry);
            } else {
                let at = slots.next;
                slots.entries[at] = entry;
                slots.next = (at + 1) % N;
            }
        }
        Ok(value)
    }

    fn find(&self, print: u64, key: &K) -> Option<V> {
        (self.lock().entries.iter())
            .find(|(p, k, _)| *p == print && k == key)
            .map(|(_, _, v)| v.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots<K, V>> {
        // Plain data, changed in single steps: a poisoned lock is still sound.
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A fingerprint of `key`: equal inputs have equal ones.
fn fingerprint<K: Hash>(key: &K) -> u64 {
    let mut hasher = rustc_hash::FxHasher::default();
    key.hash(&mut hasher);
    hasher.finish()
}

/// What a `record-attempt` answer is kept by: the usage, the event and the
/// settings; `failure` is the reason and the waits of a failure, none for a
/// success.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AttemptKey {
    pub(super) usage: policy_types::Usage,
    pub(super) provider: String,
    pub(super) model: Option<String>,
    pub(super) failure: Option<(policy_types::RecordedReason, Option<u64>, Option<u64>)>,
    pub(super) now_ms: u64,
    pub(super) config: policy_types::CooldownConfig,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_computed_once_per_input_and_errors_are_not_kept() {
        let memo: Memo<u32, String> = Memo::default();
        let mut computed = 0;
        for _ in 0..3 {
            let value = memo.get_or_try(&7, || {
                computed += 1;
                Ok::<_, ()>("seven".to_owned())
            });
            assert_eq!(value.unwrap(), "seven");
        }
        assert_eq!(computed, 1);
        assert!(memo.get_or_try(&8, || Err::<String, _>("no")).is_err());
        assert_eq!(
            memo.get_or_try(&8, || Ok::<_, ()>("eight".into())).unwrap(),
            "eight"
        );
    }

    #[test]
    fn the_oldest_input_goes_when_full() {
        let memo: Memo<usize, usize, 4> = Memo::default();
        for key in 0..=4 {
            memo.get_or_try(&key, || Ok::<_, ()>(key)).unwrap();
        }
        let mut recomputed = Vec::new();
        for key in [3, 4, 0] {
            memo.get_or_try(&key, || {
                recomputed.push(key);
                Ok::<_, ()>(key)
            })
            .unwrap();
        }
        // 0 went when 4 came; 3 and 4 were still kept.
        assert_eq!(recomputed, [0]);
    }

    #[test]
    fn inputs_that_share_a_fingerprint_are_told_apart_by_equality() {
        // Two keys with one hash: equality decides.
        #[derive(Clone, PartialEq, Eq)]
        struct Clash(u32);
        impl Hash for Clash {
            fn hash<H: Hasher>(&self, state: &mut H) {
                0u8.hash(state);
            }
        }
        let memo: Memo<Clash, u32> = Memo::default();
        assert_eq!(memo.get_or_try(&Clash(1), || Ok::<_, ()>(1)).unwrap(), 1);
        assert_eq!(memo.get_or_try(&Clash(2), || Ok::<_, ()>(2)).unwrap(), 2);
        assert_eq!(memo.get_or_try(&Clash(1), || Ok::<_, ()>(9)).unwrap(), 1);
    }
}
