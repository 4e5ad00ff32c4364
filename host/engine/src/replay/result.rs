//! What a replay produces — the decision timeline and the final profile and
//! session state — how it is rendered, and why a replay could not run.

use serde_json::Value;

use crate::runner::RunError;
use crate::state::StateError;

use super::decision::Decision;
use super::provider::Unrecorded;

/// What a replay produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The trace's clock start (ms since the epoch); the readable form
    /// counts time from it.
    pub clock_start: u64,
    /// The timeline, in order.
    pub decisions: Vec<Decision>,
    /// Final state of each profile (`{"kind":"profile","id":…,"state":…}`).
    pub profiles: Vec<Value>,
    /// Final state of each session (`{"kind":"session","id":…,…}`).
    pub sessions: Vec<Value>,
    /// Calls the recording could not answer.
    pub unrecorded: usize,
    /// Lines `--lenient` skipped.
    pub skipped_lines: usize,
}

impl Replay {
    /// The JSON Lines form: every decision, then the final state.
    pub fn json_lines(&self) -> Vec<String> {
        self.decisions
            .iter()
            .map(Decision::json_line)
            .chain(
                self.profiles
                    .iter()
                    .chain(&self.sessions)
                    .map(Value::to_string),
            )
            .collect()
    }

    /// The readable form.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for decision in &self.decisions {
            out.push_str(&decision.render(self.clock_start));
            out.push('\n');
        }
        out.push_str("\nfinal profile state\n");
        for profile in &self.profiles {
            out.push_str(&format!(
                "  {}: {}{}{}\n",
                profile["id"].as_str().unwrap_or("?"),
                profile["state"].as_str().unwrap_or("?"),
                match (
                    profile["cooldownReason"].as_str(),
                    profile["disabledReason"].as_str()
                ) {
                    (_, Some(r)) => format!(" ({r})"),
                    (Some(r), None) => format!(" ({r})"),
                    _ => String::new(),
                },
                model_cooldowns(profile)
            ));
        }
        if !self.sessions.is_empty() {
            out.push_str("\nfinal session state\n");
            for session in &self.sessions {
                let mut fields = session.as_object().cloned().unwrap_or_default();
                let id = fields.remove("id").unwrap_or_default();
                fields.remove("kind");
                out.push_str(&format!(
                    "  {}: {}\n",
                    id.as_str().unwrap_or("?"),
                    Value::Object(fields)
                ));
            }
        }
        if self.unrecorded > 0 {
            out.push_str(&format!(
                "\n{} call(s) were not in the recording\n",
                self.unrecorded
            ));
        }
        if self.skipped_lines > 0 {
            out.push_str(&format!(
                "{} bad trace line(s) skipped\n",
                self.skipped_lines
            ));
        }
        out
    }
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace's config or state could not be used.
    #[error(transparent)]
    State(#[from] StateError),
    /// The replay's runtime could not start.
    #[error("cannot start the replay's runtime: {0}")]
    Runtime(std::io::Error),
    /// A request's run failed on the state (not a failure the timeline
    /// records).
    #[error("trace request {request}: {cause}")]
    Run {
        /// The request's id in the trace.
        request: u64,
        /// The run's error (in the message, so not a `source`).
        cause: RunError,
    },
}

/// How to replay, beyond the trace itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// What a call the recording does not cover gets.
    pub unrecorded: Unrecorded,
    /// Overrides the recorded retry-wait cap (F-6.8), in ms.
    pub retry_wait_cap_ms: Option<u64>,
    /// Overrides the recorded whole-run deadline, in ms.
    pub run_timeout_ms: Option<u64>,
}

/// A profile line's model cooldowns: ` · model m (rate_limit)` each.
fn model_cooldowns(profile: &Value) -> String {
    let cooldowns = profile["modelCooldowns"].as_array().into_iter().flatten();
    cooldowns
        .map(|c| {
            let model = c["model"].as_str().unwrap_or("?");
            format!(" · model {model} ({})", c["reason"].as_str().unwrap_or("?"))
        })
        .collect()
}
