//! Answers kept for calls whose input carries no clock.
//!
//! The contract's functions are pure: the same input gives the same answer
//! (no clock, no randomness, no state kept between calls). Most take
//! `now-ms`, so their inputs never repeat; `plan-run` without a session
//! override and `pin-profile` do not, and a gateway asks them the same
//! question for every request of a model. Their checked answers are kept
//! per module (a swapped-in module starts empty), a handful of them, and
//! looked up by equality of the whole input.

use std::sync::{Mutex, PoisonError};

/// How many distinct inputs are kept: a gateway's models and their
/// selection sources, with room. The oldest goes first.
const KEPT: usize = 64;

/// Checked answers by input.
#[derive(Debug)]
pub(crate) struct Memo<K, V> {
    entries: Mutex<Vec<(K, V)>>,
}

impl<K, V> Default for Memo<K, V> {
    fn default() -> Self {
        Memo {
            entries: Mutex::new(Vec::new()),
        }
    }
}

impl<K: PartialEq + Clone, V: Clone> Memo<K, V> {
    /// The answer kept for `key`, else `compute`'s, kept when it is `Ok`.
    pub(crate) fn get_or_try<E>(
        &self,
        key: &K,
        compute: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        if let Some(value) = self
            .lock()
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
        {
            return Ok(value);
        }
        let value = compute()?;
        let mut entries = self.lock();
        if !entries.iter().any(|(k, _)| k == key) {
            if entries.len() == KEPT {
                entries.remove(0);
            }
            entries.push((key.clone(), value.clone()));
        }
        Ok(value)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(K, V)>> {
        // Plain data, changed in single steps: a poisoned lock is still sound.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
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
        let memo: Memo<usize, usize> = Memo::default();
        for key in 0..=KEPT {
            memo.get_or_try(&key, || Ok::<_, ()>(key)).unwrap();
        }
        let mut recomputed = false;
        memo.get_or_try(&0, || {
            recomputed = true;
            Ok::<_, ()>(0)
        })
        .unwrap();
        assert!(recomputed);
    }
}
