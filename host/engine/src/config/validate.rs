//! Checking a config's values once it parses: ranges of hours, seconds
//! and sandbox limits, provider endpoints, profile ids, gateway limits —
//! each error naming the file and the key.

use std::path::Path;

use super::{
    providers, Config, MAX_HOURS, MAX_PROBE_INTERVAL_SECONDS, MAX_SHORT_WAIT_MS,
    MAX_TIMEOUT_SECONDS, POLICY_LIMIT_RANGES,
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
            crate::names::check_id(id).map_err(|e| invalid(format!("auth.profiles: {e}")))?;
        }
        self.check_aliases().map_err(invalid)?;
        self.check_overflows().map_err(invalid)?;
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
        let short_wait = self.auth.cooldowns.short_wait_ms;
        if short_wait > MAX_SHORT_WAIT_MS {
            return Err(format!(
                "auth.cooldowns.shortWaitMs must be from 0 (never wait) to {MAX_SHORT_WAIT_MS} ms, not {short_wait}; a longer Retry-After moves the run to the next candidate"
            ));
        }
        if let Some(value) = self.agents.defaults.model.primary_probe_interval_seconds {
            if !(value.is_finite() && (0.0..=MAX_PROBE_INTERVAL_SECONDS).contains(&value)) {
                return Err(format!(
                    "agents.defaults.model.primaryProbeIntervalSeconds must be a number of seconds from 0 (never) to {MAX_PROBE_INTERVAL_SECONDS}, not {value}"
                ));
            }
        }
        let mut timeouts = vec![(
            "agents.defaults.timeoutSeconds".to_owned(),
            self.agents.defaults.timeout_seconds,
        )];
        timeouts.extend(self.models.timeouts.fields("models.timeouts"));
        for (p, e) in &self.models.providers {
            let prefix = format!("models.providers.{p}");
            timeouts.push((format!("{prefix}.timeoutSeconds"), e.timeout_seconds));
            timeouts.extend(e.timeouts.fields(&format!("{prefix}.timeouts")));
            for (i, entry) in e.model_settings() {
                let prefix = format!("{prefix}.models.{i}.timeouts");
                timeouts.extend(entry.timeouts.fields(&prefix));
            }
        }
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

    /// Each `overflowTo` names a model a provider serves, other than the
    /// model itself.
    fn check_overflows(&self) -> Result<(), String> {
        for (p, e) in &self.models.providers {
            for (i, entry) in e.model_settings() {
                let Some(to) = &entry.overflow_to else {
                    continue;
                };
                let key = format!("models.providers.{p}.models.{i}.overflowTo");
                let own = format!("{}/{}", crate::names::canonical_provider(p), entry.id);
                if *to == own {
                    return Err(format!("{key} names the model itself ({to:?})"));
                }
                self.known_model(to).map_err(|e| format!("{key}: {e}"))?;
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
