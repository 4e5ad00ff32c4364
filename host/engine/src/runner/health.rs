//! The host's memory of each model's responsiveness (F-12.3). The policy
//! decides what a hang means and when a slow model may be tried again; this
//! book only keeps what it answered, per `provider/model`, for the life of
//! the runner. It is model health, not credential state: nothing of it is
//! written to `auth-state.json`.

use std::collections::HashMap;
use std::sync::Mutex;

use failover_sandbox::policy::{Decider, PolicyError};

use super::model::{Gate, ModelHealth};

/// Model health per `provider/model`: only models not in full health have
/// an entry, so while every model answers the book is empty and a request
/// hashes nothing (it looked up and removed its model twice a request:
/// BENCHMARKS.md, issue 16, sixteenth part). The default hasher stays: a
/// client can name the model a run starts on.
#[derive(Debug, Default)]
pub struct HealthBook {
    models: Mutex<HashMap<String, ModelHealth>>,
}

impl HealthBook {
    /// Whether `model` may be attempted now; keeps the health the policy
    /// returns (a trial is recorded as started). The book stays locked over
    /// the policy call, so two runs never both start a trial.
    pub fn gate(
        &self,
        policy: &dyn Decider,
        model: &str,
        others_remain: bool,
        now_ms: u64,
    ) -> Result<Gate, PolicyError> {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let current = health_of(&models, model);
        let decision = policy.model_gate(&current, others_remain, now_ms)?;
        keep(&mut models, model, decision.health);
        Ok(decision.gate)
    }

    /// Records the end of an attempt on `model`: `hung` when it ran to its
    /// deadline without an answer.
    pub fn attempt_ended(
        &self,
        policy: &dyn Decider,
        model: &str,
        hung: bool,
        now_ms: u64,
    ) -> Result<(), PolicyError> {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        let current = health_of(&models, model);
        let health = policy.record_attempt_end(&current, hung, now_ms)?;
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
