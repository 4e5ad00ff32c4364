//! The host's memory of each model's responsiveness (F-12.3). The policy
//! decides what a hang means and when a slow model may be tried again; this
//! book only keeps what it answered, per `provider/model`, for the life of
//! the runner. It is model health, not credential state: nothing of it is
//! written to `auth-state.json`.

use std::collections::HashMap;
use std::sync::Mutex;

use failover_sandbox::policy::{Decider, PolicyError};

use super::model::{AttemptEnd, CandidateDecision, ModelHealth};

/// Model health per `provider/model`: only models not in full health have
/// an entry, so while every model answers the book is empty and a request
/// hashes nothing. The default hasher stays: a client can name the model a
/// run starts on.
#[derive(Debug, Default)]
pub struct HealthBook {
    models: Mutex<HashMap<String, ModelHealth>>,
}

impl HealthBook {
    /// Decides on `model` with its health: `decide` is the policy's
    /// decision given the health, and a `trial` answer is recorded as
    /// started. While the model is in full health the book is not held
    /// over the decision; otherwise it is, so two runs never both start a
    /// trial.
    pub fn decide<T>(
        &self,
        model: &str,
        now_ms: u64,
        decide: impl FnOnce(ModelHealth) -> Result<T, PolicyError>,
        decision: impl Fn(&T) -> &CandidateDecision,
    ) -> Result<T, PolicyError> {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let current = health_of(&models, model);
        if current == ModelHealth::default() {
            drop(models);
            let answer = decide(current)?;
            if matches!(decision(&answer), CandidateDecision::Trial(_)) {
                let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
                let mut health = health_of(&models, model);
                health.trial_started_at = Some(now_ms);
                keep(&mut models, model, health);
            }
            return Ok(answer);
        }
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
    pub fn attempt_ended(
        &self,
        policy: &dyn Decider,
        model: &str,
        end: AttemptEnd,
        now_ms: u64,
    ) -> Result<(), PolicyError> {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let current = health_of(&models, model);
        let health = policy.record_model_attempt(&current, end, now_ms)?;
        keep(&mut models, model, health);
        Ok(())
    }

    /// The health of `model` now (for status reports and tests).
    pub fn of(&self, model: &str) -> ModelHealth {
        health_of(
            &self.models.lock().unwrap_or_else(|e| e.into_inner()),
            model,
        )
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
