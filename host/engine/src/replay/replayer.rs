//! Runs a trace through a policy: the recorded requests, in order, through
//! the real runner with a virtual clock and the [`ReplayProvider`]; no
//! network, no sleeping, deterministic. Produces the decision timeline and
//! the final profile and session state.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::runner::{Clock, RunError, RunOptions, Runner, VirtualClock};
use crate::state::{AuthStore, SessionStore, StateDir, StateError};
use crate::status::state_json;
use failover_sandbox::policy::Decider;

use super::provider::{Answered, ReplayProvider, Unrecorded};
use super::state_feed::StateFeed;
use super::trace::{
    Header, OutcomeEvent, RequestEvent, RunSettings, StateChange, StateEvent, Trace,
};

/// The secret every replayed profile gets: replay calls no provider, and a
/// trace never holds a real one.
const PLACEHOLDER_SECRET: &str = "replay-placeholder";

/// One decision of the timeline (one JSON line with `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Decision {
    /// A request starts.
    Request {
        request: u64,
        at: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        model: String,
    },
    /// A provider call and what the policy made of it.
    #[serde(rename_all = "camelCase")]
    Attempt {
        request: u64,
        at: u64,
        model: String,
        profile: String,
        /// `ok`, or the failure's reason.
        outcome: String,
        answered: Answered,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
    /// A candidate skipped without a call (every profile blocked).
    Skip {
        request: u64,
        model: String,
        reason: String,
    },
    /// A move along the chain (F-10.2's `model_fallback_decision`).
    #[serde(rename_all = "camelCase")]
    Fallback {
        request: u64,
        from: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        to: Option<String>,
        reason: String,
        final_outcome: String,
    },
    /// The request was served.
    Served {
        request: u64,
        at: u64,
        model: String,
        profile: String,
        source: String,
    },
    /// The request failed.
    Failed {
        request: u64,
        at: u64,
        error: String,
        message: String,
    },
    /// Another process changed a profile's state or a session (F-12.4).
    State {
        at: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
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
            } => format!(
                "{} #{request} request {model}{}",
                t(at),
                session
                    .as_ref()
                    .map(|s| format!(" (session {s})"))
                    .unwrap_or_default()
            ),
            Decision::Attempt {
                request,
                at,
                model,
                profile,
                outcome,
                answered,
                status,
            } => format!(
                "{} #{request}   {} {model} via {profile}: {outcome}{} [{}]",
                t(at),
                if outcome == "ok" { "✓" } else { "✗" },
                status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
                match answered {
                    Answered::Recorded => "recorded",
                    Answered::Covered => "covered",
                    Answered::Unrecorded => "UNRECORDED",
                }
            ),
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
}

/// What a replay produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub clock_start: u64,
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
            .map(|d| serde_json::to_string(d).expect("decisions serialise"))
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
                "  {}: {}{}\n",
                profile["id"].as_str().unwrap_or("?"),
                profile["state"].as_str().unwrap_or("?"),
                match (
                    profile["cooldownReason"].as_str(),
                    profile["disabledReason"].as_str()
                ) {
                    (_, Some(r)) => format!(" ({r})"),
                    (Some(r), None) => format!(" ({r})"),
                    _ => String::new(),
                }
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
    #[error(transparent)]
    State(#[from] StateError),
    #[error("cannot start the replay's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("trace request {request}: {source}")]
    Run {
        request: u64,
        #[source]
        source: RunError,
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

/// The settings a replay runs under: the recorded ones (F-12.4), with the
/// options' overrides; a version 1 trace recorded none, and replays with
/// the built-in retry-wait cap and no run deadline.
fn settings_of(header: &Header, options: &ReplayOptions) -> (u64, Option<u64>) {
    let recorded = header.settings.as_ref();
    let retry_wait_cap_ms = options
        .retry_wait_cap_ms
        .or(recorded.map(|s| s.retry_wait_cap_ms))
        .unwrap_or(crate::runner::DEFAULT_RETRY_WAIT_CAP_MS);
    let run_timeout_ms = options
        .run_timeout_ms
        .or(recorded.map(|s| s.run_timeout_ms));
    (retry_wait_cap_ms, run_timeout_ms)
}

/// The header's config, with the resolved settings it was recorded under.
fn recorded_config(header: &Header, trace_path: &Path) -> Result<Config, StateError> {
    let mut config = Config::from_value(header.config.clone(), trace_path)?;
    if let Some(settings) = &header.settings {
        apply(&mut config, settings);
    }
    Ok(config)
}

fn apply(config: &mut Config, settings: &RunSettings) {
    let cooldowns = &mut config.auth.cooldowns;
    cooldowns.rate_limited_profile_rotations = settings.rate_limited_profile_rotations;
    cooldowns.overloaded_profile_rotations = settings.overloaded_profile_rotations;
    cooldowns.overloaded_backoff_ms = settings.overloaded_backoff_ms;
    config.agents.defaults.model.primary_probe_interval_seconds =
        Some(settings.primary_probe_interval_ms as f64 / 1000.0);
}

/// Replays `trace` through `policy`; `progress` is told after each request.
pub fn replay(
    trace: &Trace,
    trace_path: &Path,
    policy: Arc<dyn Decider>,
    options: &ReplayOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<Replay, ReplayError> {
    let header = &trace.header;
    let config = recorded_config(header, trace_path)?;
    let (retry_wait_cap_ms, run_timeout_ms) = settings_of(header, options);
    let (store, sessions) = seed_state(header)?;
    let clock = VirtualClock::at(header.clock_start);
    let feed = Arc::new(StateFeed::new(
        trace.states.clone(),
        store.clone(),
        sessions.clone(),
    ));
    let provider = ReplayProvider::new(trace.outcomes.clone(), clock.clone(), options.unrecorded)
        .with_feed(feed.clone());
    let runner = Runner::new(
        policy,
        config,
        store.clone(),
        sessions.clone(),
        provider,
        clock.clone(),
    )
    .with_retry_wait_cap(retry_wait_cap_ms);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(ReplayError::Runtime)?;
    let mut requests = trace.requests.clone();
    requests.sort_by_key(|r| (r.at, r.id));
    let horizons = read_horizons(&requests, &trace.outcomes);
    let mut decisions = Vec::new();
    for (done, request) in requests.iter().enumerate() {
        let now = clock.now_ms();
        if request.at > now {
            clock.advance(request.at - now);
        }
        feed.catch_up(clock.now_ms().max(horizons[done]))?;
        decisions.extend(feed.take_applied().into_iter().map(Decision::from));
        let started = clock.now_ms();
        decisions.push(Decision::Request {
            request: request.id,
            at: started,
            session: request.session.clone(),
            model: request.model.clone(),
        });
        let mut run_options = options_for(&header.agent, request);
        run_options.deadline_ms = run_timeout_ms.map(|ms| started.saturating_add(ms));
        let first_call = runner.provider().call_count();
        let result = runtime.block_on(runner.run(&run_options, &request.id));
        let calls = runner.provider().calls_from(first_call);
        let at = clock.now_ms();
        // Changes another process made while this request ran.
        decisions.extend(feed.take_applied().into_iter().map(Decision::from));
        let (attempts, steps) = match &result {
            Ok(outcome) => (outcome.attempts.clone(), outcome.steps.clone()),
            Err(RunError::Exhausted(summary)) => (summary.attempts.clone(), summary.steps.clone()),
            Err(RunError::Stopped { attempts, .. })
            | Err(RunError::DeadlineExceeded { attempts }) => (attempts.clone(), Vec::new()),
            Err(RunError::Policy(_)) | Err(RunError::State(_)) | Err(RunError::NoModel) => {
                (Vec::new(), Vec::new())
            }
        };
        // Failed attempts pair with the failed calls, in order; the served
        // call is the last one.
        let mut failed_calls = calls.iter().filter(|c| !c.ok);
        for attempt in &attempts {
            match &attempt.profile {
                None => decisions.push(Decision::Skip {
                    request: request.id,
                    model: attempt.model.clone(),
                    reason: attempt.reason.as_str().into(),
                }),
                Some(profile) => {
                    let call = failed_calls.next();
                    decisions.push(Decision::Attempt {
                        request: request.id,
                        at: call.map_or(at, |c| c.at),
                        model: attempt.model.clone(),
                        profile: profile.clone(),
                        outcome: attempt.reason.as_str().into(),
                        answered: call.map_or(Answered::Unrecorded, |c| c.answered),
                        status: attempt.status,
                    });
                }
            }
        }
        for step in &steps {
            decisions.push(Decision::Fallback {
                request: request.id,
                from: step.from_model.clone(),
                to: step.to_model.clone(),
                reason: step.from_failure_reason.as_str().into(),
                final_outcome: step.final_outcome.into(),
            });
        }
        match result {
            Ok(outcome) => {
                if let Some(call) = calls.iter().rev().find(|c| c.ok) {
                    decisions.push(Decision::Attempt {
                        request: request.id,
                        at: call.at,
                        model: outcome.model.clone(),
                        profile: outcome.profile.clone(),
                        outcome: "ok".into(),
                        answered: call.answered,
                        status: None,
                    });
                }
                decisions.push(Decision::Served {
                    request: request.id,
                    at,
                    model: outcome.model,
                    profile: outcome.profile,
                    source: serde_json::to_value(outcome.source)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default(),
                });
            }
            Err(RunError::State(source)) => {
                return Err(ReplayError::Run {
                    request: request.id,
                    source: RunError::State(source),
                })
            }
            Err(error) => decisions.push(Decision::Failed {
                request: request.id,
                at,
                error: error_kind(&error),
                message: error.to_string(),
            }),
        }
        progress(done + 1, requests.len());
    }
    let unrecorded = runner
        .provider()
        .calls()
        .iter()
        .filter(|c| c.answered == Answered::Unrecorded)
        .count();
    let final_now = clock.now_ms();
    let profiles = store
        .usage()?
        .into_iter()
        .filter(|(id, _)| header.profiles.iter().any(|p| &p.id == id))
        .map(|(id, usage)| {
            let mut line = Map::new();
            line.insert("kind".into(), "profile".into());
            line.insert("id".into(), id.into());
            if let Value::Object(state) = state_json(&usage, final_now) {
                line.extend(state);
            }
            Value::Object(line)
        })
        .collect();
    let sessions = sessions
        .all()?
        .into_iter()
        .map(|(id, entry)| {
            let mut line = json!({"kind": "session", "id": id});
            if let (Some(line), Ok(Value::Object(fields))) =
                (line.as_object_mut(), serde_json::to_value(entry))
            {
                line.extend(fields);
            }
            line
        })
        .collect();
    Ok(Replay {
        clock_start: header.clock_start,
        decisions,
        profiles,
        sessions,
        unrecorded,
        skipped_lines: trace.skipped.len(),
    })
}

/// The run options a recorded request means (as the gateway routes it).
fn options_for(agent: &str, request: &RequestEvent) -> RunOptions {
    RunOptions {
        session: request.session.clone(),
        compaction_count: request.compaction_count,
        ..RunOptions::for_requested(agent, &request.model)
    }
}

fn error_kind(error: &RunError) -> String {
    match error {
        RunError::Exhausted(_) => "exhausted".into(),
        RunError::Stopped { reason, .. } => format!(
            "stopped:{}",
            serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        RunError::DeadlineExceeded { .. } => "deadline".into(),
        RunError::NoModel => "no_model".into(),
        RunError::Policy(_) => "policy".into(),
        RunError::State(_) => "state".into(),
    }
}

/// An in-memory scratch state holding the header's profiles (with a
/// placeholder secret), their routing state, and the sessions.
fn seed_state(header: &Header) -> Result<(AuthStore, SessionStore), StateError> {
    let paths = StateDir::at("<replay>").agent(&header.agent)?;
    let store = AuthStore::in_memory(paths);
    store.update_profiles(|file| {
        for profile in &header.profiles {
            match profile.kind {
                crate::auth::CredentialKind::OAuth => {
                    let mut credential = Map::new();
                    credential.insert("type".into(), "oauth".into());
                    credential.insert("provider".into(), profile.provider.clone().into());
                    credential.insert("access".into(), PLACEHOLDER_SECRET.into());
                    if profile.refreshable {
                        credential.insert("refresh".into(), PLACEHOLDER_SECRET.into());
                    }
                    if let Some(expires) = profile.expires {
                        credential.insert("expires".into(), expires.into());
                    }
                    crate::state::secrets::check_id(&profile.id).map_err(StateError::Refused)?;
                    file.put_oauth(&profile.id, credential);
                }
                kind => {
                    file.put_static(&profile.id, &profile.provider, kind, PLACEHOLDER_SECRET)?
                }
            }
        }
        Ok(())
    })?;
    store.update_usage(|usage| {
        for profile in &header.profiles {
            usage.insert(profile.id.clone(), profile.usage.clone());
        }
        Ok(())
    })?;
    let sessions = SessionStore::in_memory();
    for (id, entry) in &header.sessions {
        sessions.update(id, |e| *e = entry.clone())?;
    }
    Ok((store, sessions))
}

/// For each request (in `requests`' order), until when a change another
/// process made is one its decisions before its first call could have
/// read. Live, the gateway reads the state some time after a request
/// starts — a millisecond later, say — and notices a foreign change then;
/// the replay makes those decisions at the request's own instant, so the
/// change must be applied up to the request's first recorded call (or, for
/// a request that made none, up to the next request).
fn read_horizons(requests: &[RequestEvent], outcomes: &[OutcomeEvent]) -> Vec<u64> {
    let mut first_call: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for outcome in outcomes {
        let at = first_call.entry(outcome.request).or_insert(outcome.at);
        *at = (*at).min(outcome.at);
    }
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            // A change noticed at the next request's instant is its own.
            let next = requests.get(index + 1).map(|r| r.at.saturating_sub(1));
            match (first_call.get(&request.id), next) {
                (Some(call), Some(next)) => (*call).min(next),
                (Some(call), None) => *call,
                (None, Some(next)) => next,
                (None, None) => request.at,
            }
            .max(request.at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: u64, at: u64) -> RequestEvent {
        RequestEvent {
            id,
            at,
            session: None,
            model: "auto".into(),
            stream: false,
            compaction_count: 0,
            content: None,
        }
    }

    fn call(request: u64, at: u64) -> OutcomeEvent {
        OutcomeEvent {
            request,
            at,
            provider: "openai".into(),
            model: "openai/gpt-4o".into(),
            profile: "openai:a".into(),
            latency_ms: 5,
            error: None,
            hung: false,
            content: None,
        }
    }

    #[test]
    fn changes_read_before_a_first_call_apply_before_its_request() {
        let requests = [request(1, 100), request(2, 200), request(3, 300)];
        // Request 1 called at 102 and 150; 2 made no call; 3 called at 301.
        let outcomes = [call(1, 150), call(1, 102), call(3, 301)];
        assert_eq!(read_horizons(&requests, &outcomes), [102, 299, 301]);
    }
}
