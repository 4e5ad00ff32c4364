//! An attempt's deadlines: connecting, the first token of a stream, the
//! silence between its events, and the whole attempt. Each is set in
//! `timeouts` at three levels — `models.timeouts` for every provider,
//! `models.providers.<p>.timeouts` (with `timeoutSeconds`, the attempt's),
//! and a model's entry in `models.providers.<p>.models` — a level's absent
//! field being the enclosing level's.

use serde::{Deserialize, Serialize};

use super::{seconds_to_ms, DEFAULT_ATTEMPT_TIMEOUT_SECONDS};

/// Connecting to a provider (DNS, TCP, TLS): a reachable API connects in
/// well under a second, so ten is a dead host, not a slow one.
pub(crate) const DEFAULT_CONNECT_SECONDS: f64 = 10.0;
/// From the request to a stream's first token: a person at a chat waits
/// this long before a fallback is the better answer. Reasoning models that
/// think before their first token want more, set on their own entry.
pub(crate) const DEFAULT_FIRST_TOKEN_SECONDS: f64 = 30.0;
/// The longest silence between a stream's events once it flows: providers
/// that pause send keep-alives far more often (Anthropic's `ping`).
pub(crate) const DEFAULT_IDLE_SECONDS: f64 = 30.0;

/// `timeouts`: deadlines in seconds, each absent one the enclosing level's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Timeouts {
    /// `connectSeconds`: to open the connection.
    pub connect_seconds: Option<f64>,
    /// `firstTokenSeconds`: from the request to a stream's first text or
    /// tool call; passing it moves the run to the next model.
    pub first_token_seconds: Option<f64>,
    /// `idleSeconds`: the longest wait between a stream's events.
    pub idle_seconds: Option<f64>,
    /// `attemptSeconds`: from the request to the whole reply, or to a
    /// stream's first token.
    pub attempt_seconds: Option<f64>,
}

impl Timeouts {
    /// `self`, its absent fields taken from `outer`.
    pub fn within(self, outer: Timeouts) -> Timeouts {
        Timeouts {
            connect_seconds: self.connect_seconds.or(outer.connect_seconds),
            first_token_seconds: self.first_token_seconds.or(outer.first_token_seconds),
            idle_seconds: self.idle_seconds.or(outer.idle_seconds),
            attempt_seconds: self.attempt_seconds.or(outer.attempt_seconds),
        }
    }

    /// The deadlines in ms, the defaults filling what no level set. None
    /// is longer than the attempt's: a wait past the attempt's deadline
    /// would never be reached.
    pub fn resolve(self) -> Deadlines {
        let attempt_ms = seconds_to_ms(
            self.attempt_seconds
                .unwrap_or(DEFAULT_ATTEMPT_TIMEOUT_SECONDS),
        );
        let within_attempt = |seconds: Option<f64>, default: f64| {
            seconds_to_ms(seconds.unwrap_or(default)).min(attempt_ms)
        };
        Deadlines {
            connect_ms: within_attempt(self.connect_seconds, DEFAULT_CONNECT_SECONDS),
            first_token_ms: within_attempt(self.first_token_seconds, DEFAULT_FIRST_TOKEN_SECONDS),
            idle_ms: within_attempt(self.idle_seconds, DEFAULT_IDLE_SECONDS),
            attempt_ms,
        }
    }

    /// Each set field with its key under `prefix`, for range checks.
    pub fn fields(&self, prefix: &str) -> [(String, Option<f64>); 4] {
        let key = |name: &str| format!("{prefix}.{name}");
        [
            (key("connectSeconds"), self.connect_seconds),
            (key("firstTokenSeconds"), self.first_token_seconds),
            (key("idleSeconds"), self.idle_seconds),
            (key("attemptSeconds"), self.attempt_seconds),
        ]
    }
}

/// An attempt's deadlines, resolved, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// To open the connection.
    pub connect_ms: u64,
    /// From the request to a stream's first token.
    pub first_token_ms: u64,
    /// Between a stream's events.
    pub idle_ms: u64,
    /// From the request to the whole reply or a stream's first token.
    pub attempt_ms: u64,
}

impl Default for Deadlines {
    fn default() -> Self {
        Timeouts::default().resolve()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_inherits_what_it_leaves_out_and_nothing_outlasts_the_attempt() {
        let global = Timeouts {
            first_token_seconds: Some(20.0),
            ..Default::default()
        };
        let provider = Timeouts {
            attempt_seconds: Some(15.0),
            idle_seconds: Some(5.0),
            ..Default::default()
        };
        let model = Timeouts {
            first_token_seconds: Some(8.0),
            ..Default::default()
        };
        let deadlines = model.within(provider.within(global)).resolve();
        assert_eq!(
            deadlines,
            Deadlines {
                connect_ms: 10_000,
                first_token_ms: 8_000,
                idle_ms: 5_000,
                attempt_ms: 15_000,
            }
        );
        let provider_only = provider.within(global).resolve();
        assert_eq!(provider_only.first_token_ms, 15_000, "cut to the attempt");
        assert_eq!(Deadlines::default().attempt_ms, 120_000);
        assert_eq!(Deadlines::default().first_token_ms, 30_000);
    }
}
