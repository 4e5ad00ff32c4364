//! One decision of a replay's timeline: a request, an attempt, a skip, a
//! fallback step, a served answer (whole or broken) or a failure, a state
//! change another process made — one JSON line each with `--json`, one
//! text line each otherwise.

use serde::Serialize;
use serde_json::Value;

use super::provider::Answered;
use super::trace::{StateChange, StateEvent};

/// One decision of the timeline (one JSON line with `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Decision {
    /// A request starts.
    Request {
        /// The request's id in the trace.
        request: u64,
        /// When it started (ms since the epoch, on the replay's clock).
        at: u64,
        /// Its session, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// What was asked for: `auto`, `agent:<id>` or `provider/model`.
        model: String,
    },
    /// A provider call and what the policy made of it.
    #[serde(rename_all = "camelCase")]
    Attempt {
        /// The request's id in the trace.
        request: u64,
        /// When the call started (ms since the epoch, on the replay's clock).
        at: u64,
        /// The model called, `provider/model`.
        model: String,
        /// The profile used.
        profile: String,
        /// `ok`, or the failure's reason.
        outcome: String,
        /// How the replay answered the call.
        answered: Answered,
        /// The failure's HTTP status, if it had one.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
    /// A candidate skipped without a call (every profile blocked).
    Skip {
        /// The request's id in the trace.
        request: u64,
        /// The model skipped, `provider/model`.
        model: String,
        /// Why its profiles were blocked (a recorded reason).
        reason: String,
    },
    /// A move along the chain (F-10.2's `model_fallback_decision`).
    #[serde(rename_all = "camelCase")]
    Fallback {
        /// The request's id in the trace.
        request: u64,
        /// The model failed over from.
        from: String,
        /// The model moved to; absent at the end of the chain.
        #[serde(skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        /// The reason `from` failed.
        reason: String,
        /// `next_fallback`, `succeeded` or `chain_exhausted`.
        final_outcome: String,
    },
    /// The request was served.
    Served {
        /// The request's id in the trace.
        request: u64,
        /// When the run ended (ms since the epoch, on the replay's clock).
        at: u64,
        /// The model that served it, `provider/model`.
        model: String,
        /// The profile that served it.
        profile: String,
        /// How the run's model was selected (`configured_default`,
        /// `auto_override` …).
        source: String,
    },
    /// The request was served, and the provider broke the stream after its
    /// first content: the client got an error event, the attempt failed
    /// (F-12.12).
    Broken {
        /// The request's id in the trace.
        request: u64,
        /// When it broke (ms since the epoch, on the replay's clock).
        at: u64,
        /// The model that served it, `provider/model`.
        model: String,
        /// The profile that served it.
        profile: String,
        /// The failure's reason, as the policy classified it.
        reason: String,
    },
    /// The request failed.
    Failed {
        /// The request's id in the trace.
        request: u64,
        /// When the run ended (ms since the epoch, on the replay's clock).
        at: u64,
        /// The kind of failure: `exhausted`, `stopped:<reason>`, `deadline`,
        /// `no_model` or `policy`.
        error: String,
        /// The run's error message.
        message: String,
    },
    /// Another process changed a profile's state or a session (F-12.4).
    State {
        /// When the change was seen (ms since the epoch).
        at: u64,
        /// The profile whose state changed, for a profile change.
        #[serde(skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
        /// The session that changed, for a session change.
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// The profile's state or the session entry from then on.
        value: Value,
    },
}

impl From<StateEvent> for Decision {
    fn from(event: StateEvent) -> Self {
        let (profile, session, value) = match event.change {
            StateChange::Profile { profile, usage } => (
                Some(profile),
                None,
                serde_json::to_value(usage).unwrap_or_default(),
            ),
            StateChange::Session { session, entry } => (
                None,
                Some(session),
                serde_json::to_value(entry).unwrap_or_default(),
            ),
        };
        Decision::State {
            at: event.at,
            profile,
            session,
            value,
        }
    }
}

impl Decision {
    /// The kind, as in the JSON form.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Request { .. } => "request",
            Decision::Attempt { .. } => "attempt",
            Decision::Skip { .. } => "skip",
            Decision::Fallback { .. } => "fallback",
            Decision::Served { .. } => "served",
            Decision::Broken { .. } => "broken",
            Decision::Failed { .. } => "failed",
            Decision::State { .. } => "state",
        }
    }

    /// One readable line; `start` is the trace's clock start.
    pub fn render(&self, start: u64) -> String {
        let t = |at: &u64| format!("t+{:>8.3}s", at.saturating_sub(start) as f64 / 1000.0);
        match self {
            Decision::Request {
                request,
                at,
                session,
                model,
            } => {
                let session = session.as_ref().map(|s| format!(" (session {s})"));
                format!(
                    "{} #{request} request {model}{}",
                    t(at),
                    session.unwrap_or_default()
                )
            }
            Decision::Attempt { .. } => self.attempt_line(&t),
            Decision::Skip {
                request,
                model,
                reason,
            } => {
                format!("{:>11} #{request}   - {model} skipped: {reason}", "")
            }
            Decision::Fallback {
                request,
                from,
                to,
                reason,
                final_outcome,
            } => format!(
                "{:>11} #{request}   → {from} → {} ({reason}, {final_outcome})",
                "",
                to.as_deref().unwrap_or("end of chain")
            ),
            Decision::Served {
                request,
                at,
                model,
                profile,
                source,
            } => {
                format!(
                    "{} #{request} served by {model} via {profile} (selection: {source})",
                    t(at)
                )
            }
            Decision::Broken {
                request,
                at,
                model,
                profile,
                reason,
            } => format!(
                "{} #{request} stream from {model} via {profile} BROKE after its first content: {reason}",
                t(at)
            ),
            Decision::Failed {
                request,
                at,
                error,
                message,
            } => {
                format!("{} #{request} FAILED ({error}): {message}", t(at))
            }
            Decision::State {
                at,
                profile,
                session,
                value,
            } => {
                let what = match (profile, session) {
                    (Some(profile), _) => format!("profile {profile}"),
                    (None, Some(session)) => format!("session {session}"),
                    (None, None) => String::new(),
                };
                format!("{} changed by another process: {what} = {value}", t(at))
            }
        }
    }

    /// An attempt's line: ✓ or ✗, the model and profile, how the
    /// recording answered.
    fn attempt_line(&self, t: &dyn Fn(&u64) -> String) -> String {
        let Decision::Attempt {
            request,
            at,
            model,
            profile,
            outcome,
            answered,
            status,
        } = self
        else {
            return String::new();
        };
        let mark = if outcome == "ok" { "✓" } else { "✗" };
        let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
        let answered = match answered {
            Answered::Recorded => "recorded",
            Answered::Covered => "covered",
            Answered::Unrecorded => "UNRECORDED",
        };
        format!(
            "{} #{request}   {mark} {model} via {profile}: {outcome}{status} [{answered}]",
            t(at)
        )
    }
}
