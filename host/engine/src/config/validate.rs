//! Checking a config's values once it parses: ranges of hours, seconds
//! and sandbox limits, provider endpoints, profile ids, gateway limits —
//! each error naming the file and the key.

use std::path::Path;

use super::{
    providers, Config, MAX_HOURS, MAX_PROBE_INTERVAL_SECONDS, MAX_TIMEOUT_SECONDS,
    POLICY_LIMIT_RANGES,
};
use crate::state::StateError;

impl Config {
    /// Checks every value; the first bad one is the error.
    pub(super) fn validate(&self, path: &Path) -> Result<(), StateError> {
        let invalid = |message: String| StateError::Invalid {
            path: path.to_owned(),
            message,
        };
        self.check_hours().map_err(invalid)?;
        self.check_seconds().map_err(invalid)?;
        self.check_policy_limits().map_err(invalid)?;
        for (provider, endpoint) in &self.models.providers {
            providers::check(provider, endpoint).map_err(invalid)?;
        }
        for id in self.auth.profiles.keys() {
            crate::state::secrets::check_id(id)
                .map_err(|e| invalid(format!("auth.profiles: {e}")))?;
        }
        self.check_aliases().map_err(invalid)?;
        self.gateway.validate(path)?;
        self.state.validate(path)
    }

    /// `auth.cooldowns.*Hours`: above 0, at most a year.
    fn check_hours(&self) -> Result<(), String> {
        let c = &self.auth.cooldowns;
        let hours = [
            (
                "auth.cooldowns.billingBackoffHours".to_owned(),
                c.billing_backoff_hours,
            ),
            (
                "auth.cooldowns.billingMaxHours".to_owned(),
                c.billing_max_hours,
            ),
            (
                "auth.cooldowns.failureWindowHours".to_owned(),
                c.failure_window_hours,
            ),
        ]
        .into_iter()
        .chain(c.billing_backoff_hours_by_provider.iter().map(|(p, h)| {
            (
                format!("auth.cooldowns.billingBackoffHoursByProvider.{p}"),
                *h,
            )
        }));
        for (key, value) in hours {
            if !(value.is_finite() && value > 0.0 && value <= MAX_HOURS) {
                return Err(format!(
                    "{key} must be a number of hours above 0 and at most {MAX_HOURS}, not {value}"
                ));
            }
        }
        Ok(())
    }

    /// Deadlines and the primary's re-probe interval, in seconds.
    fn check_seconds(&self) -> Result<(), String> {
        if let Some(value) = self.agents.defaults.model.primary_probe_interval_seconds {
            if !(value.is_finite() && (0.0..=MAX_PROBE_INTERVAL_SECONDS).contains(&value)) {
                return Err(format!(
                    "agents.defaults.model.primaryProbeIntervalSeconds must be a number of seconds from 0 (never) to {MAX_PROBE_INTERVAL_SECONDS}, not {value}"
                ));
            }
        }
        let timeouts = self
            .models
            .providers
            .iter()
            .map(|(p, e)| {
                (
                    format!("models.providers.{p}.timeoutSeconds"),
                    e.timeout_seconds,
                )
            })
            .chain([(
                "agents.defaults.timeoutSeconds".to_owned(),
                self.agents.defaults.timeout_seconds,
            )]);
        for (key, value) in timeouts {
            let Some(value) = value else { continue };
            if !(value.is_finite() && value > 0.0 && value <= MAX_TIMEOUT_SECONDS) {
                return Err(format!(
                    "{key} must be a number of seconds above 0 and at most {MAX_TIMEOUT_SECONDS}, not {value}"
                ));
            }
        }
        Ok(())
    }

    /// `policy.*`: within the ranges a policy can work in.
    fn check_policy_limits(&self) -> Result<(), String> {
        let p = &self.policy;
        let limits = [
            p.fuel_per_call,
            p.max_memory_bytes,
            p.call_deadline_ms,
            p.max_message_bytes,
        ];
        for ((key, low, high), value) in POLICY_LIMIT_RANGES.iter().zip(limits) {
            if let Some(value) = value {
                if !(*low..=*high).contains(&value) {
                    return Err(format!("{key} must be from {low} to {high}, not {value}"));
                }
            }
        }
        Ok(())
    }
}
