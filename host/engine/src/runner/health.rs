//! The host's memory of each model's responsiveness (F-12.3). The policy
//! decides what a hang means and when a slow model may be tried again; this
//! book only keeps what it answered, per `provider/model`, for the life of
//! the runner. It is model health, not credential state: nothing of it is
//! written to `auth-state.json`.

use std::collections::HashMap;
use std::sync::Mutex;

use failover_policy::{Decider, PolicyError};

use super::model::{AttemptEnd, CandidateDecision, ModelHealth};

/// Model health per `provider/model`: only models not in full health have
/// an entry, so while every model answers the book is empty and a request
/// hashes nothing. The default hasher stays: a client can name the model a
/// run starts on.
#[derive(Debug, Default)]
pub struct HealthBook {
    models: Mutex<HashMap<String, ModelHealth>>,
}

/// Times a trial answer is asked again because another run changed the
/// model's health under it, before the last asking holds the book: races
/// are rare (a trial is one attempt a minute), and each loses only to a
/// change that actually happened.
const TRIAL_RACES: usize = 3;

impl HealthBook {
    /// Decides on `model` with its health: `decide` is the policy's
    /// decision given the health, and a `trial` answer is recorded as
    /// started. The book is not held over the decision; a trial is marked
    /// only if the health is still the one decided on. When another run
    /// changed it meanwhile (started a trial of its own, or ended an
    /// attempt), the policy is asked again with the health as it is now,
    /// so two runs never both start a trial.
    pub fn decide<T>(
        &self,
        model: &str,
        now_ms: u64,
        decide: impl Fn(ModelHealth) -> Result<T, PolicyError>,
        decision: impl Fn(&T) -> &CandidateDecision,
    ) -> Result<T, PolicyError> {
        let mut health = self.of(model);
        for _ in 0..TRIAL_RACES {
            let answer = decide(health)?;
            if !matches!(decision(&answer), CandidateDecision::Trial(_)) {
                return Ok(answer);
            }
            let mut models = self.lock();
            let now = health_of(&models, model);
            if now == health {
                let trial = ModelHealth {
                    trial_started_at: Some(now_ms),
                    ..health
                };
                keep(&mut models, model, trial);
                return Ok(answer);
            }
            health = now;
        }
        // Lost every race: decide once more with the book held.
        let mut models = self.lock();
        let current = health_of(&models, model);
        let answer = decide(current)?;
        if matches!(decision(&answer), CandidateDecision::Trial(_)) {
            let trial = ModelHealth {
                trial_started_at: Some(now_ms),
                ..current
            };
            keep(&mut models, model, trial);
        }
        Ok(answer)
    }

    /// Records how an attempt on `model` ended.
    pub(crate) fn attempt_ended(
        &self,
        policy: &dyn Decider,
        model: &str,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<(), PolicyError> {
        let mut models = self.lock();
        let current = health_of(&models, model);
        let health = policy.record_model_attempt(&current, end, now_ms)?;
        keep(&mut models, model, health);
        Ok(())
    }

    /// The health of `model` now (for status reports and tests).
    pub fn of(&self, model: &str) -> ModelHealth {
        health_of(&self.lock(), model)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ModelHealth>> {
        // Plain data, changed in single steps: a poisoned lock is still sound.
        self.models.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The health kept for `model`: full health when it has no entry.
fn health_of(models: &HashMap<String, ModelHealth>, model: &str) -> ModelHealth {
    if models.is_empty() {
        return ModelHealth::default();
    }
    models.get(model).copied().unwrap_or_default()
}

/// Keeps `health` for `model`; a healthy model takes no room.
fn keep(models: &mut HashMap<String, ModelHealth>, model: &str, health: ModelHealth) {
    if health == ModelHealth::default() {
        if !models.is_empty() {
            models.remove(model);
        }
    } else {
        models.insert(model.to_owned(), health);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::RecordedReason;

    const MODEL: &str = "openai/gpt-x";

    /// A slow model whose slow spell is over.
    fn spell_over() -> ModelHealth {
        ModelHealth {
            hangs: 2,
            last_hang_at: Some(0),
            slow_until: Some(1_000),
            trial_started_at: None,
        }
    }

    /// The default policy's word on such a model: a trial, unless one is
    /// under way.
    fn gate(health: ModelHealth) -> CandidateDecision {
        match health.trial_started_at {
            Some(_) => CandidateDecision::Skip(RecordedReason::Timeout),
            None => CandidateDecision::Trial(vec!["openai:a".into()]),
        }
    }

    #[test]
    fn of_two_runs_racing_for_a_trial_one_starts_it() {
        let book = HealthBook::default();
        keep(&mut book.lock(), MODEL, spell_over());
        let asked = std::cell::Cell::new(0);
        let outer = book
            .decide(
                MODEL,
                5_000,
                |health| {
                    asked.set(asked.get() + 1);
                    if asked.get() == 1 {
                        // Another run decides meanwhile and starts the trial.
                        let inner = book.decide(MODEL, 5_000, |h| Ok(gate(h)), |d| d).unwrap();
                        assert!(matches!(inner, CandidateDecision::Trial(_)));
                    }
                    Ok(gate(health))
                },
                |d| d,
            )
            .unwrap();
        assert_eq!(outer, CandidateDecision::Skip(RecordedReason::Timeout));
        assert_eq!(asked.get(), 2, "asked again once the trial was under way");
        assert_eq!(book.of(MODEL).trial_started_at, Some(5_000));
    }

    #[test]
    fn a_healthy_model_is_asked_once_and_takes_no_room() {
        let book = HealthBook::default();
        let asked = std::cell::Cell::new(0);
        let answer = book
            .decide(
                MODEL,
                5_000,
                |health| {
                    asked.set(asked.get() + 1);
                    assert_eq!(health, ModelHealth::default());
                    Ok(CandidateDecision::Attempt(vec!["openai:a".into()]))
                },
                |d| d,
            )
            .unwrap();
        assert!(matches!(answer, CandidateDecision::Attempt(_)));
        assert_eq!(asked.get(), 1);
        assert!(book.lock().is_empty());
    }
}
